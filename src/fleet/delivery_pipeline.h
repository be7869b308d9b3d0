// The path of a work or broadcast message from the intake to the broker's answer, as code: the
// stages are DeliveryPipeline's private methods, called in order from process(), and read top
// to bottom in delivery_pipeline.cc:
//
//   take [the intake's thread: nats.c's]   -> the dispatcher's queue (the hand-off to handlers)
//   process [a handler thread]:
//     admit          skip what waited since before a gap; hold what arrives while the
//                    downstream is down (DownstreamGate)
//     screen         count it; set aside what was delivered again and again with no verdict
//     run_handler    the user's handler or the daemon's sink returns a Disposition
//     conclude       the verdict carried out: a retry (the downstream failed) stays in hand,
//                    no delivery used, and the gate decides what comes next (keep_for_retry,
//                    apply); anything else is settled
//     settle         ack, nak with backoff, or term after storing the dead letter; the answer
//                    goes out through the Transport and the message's place in the window is
//                    freed (IntakeControl::message_done)
//
// A handler that returns Disposition::later() leaves its message waiting in `deferred_`, out of
// the window; its Message::settle (any thread, settle_deferred) runs conclude as the handler's
// return would have.
//
// The supervisor (ConsumerSubscription) owns the intake and calls the upkeep here from its own
// thread: keep_alive, tend_held, resend_recent_acks, stop.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "consume/dispatcher.h"
#include "fleet/delivery_control.h"
#include "fleet/downstream_gate.h"
#include "fleet/flow_tuner.h"
#include "fleet/subscription_status.h"
#include "fleet/transport.h"
#include "natsfleet/fleet.h"
#include "natsfleet/spec.h"

namespace natsfleet::fleet {

// What the pipeline asks of the intake that feeds it. Called from handler threads.
class IntakeControl {
 public:
  virtual ~IntakeControl() = default;
  // Reads what reached this replica into the pipeline (take_all), waiting up to `wait` for a
  // first message; false when there is nothing to read from now (see Dispatcher::Options::feed).
  virtual bool read(std::chrono::milliseconds wait) = 0;
  // A message left the pipeline (settled, skipped, given back): its place in the window is free.
  virtual void message_done() = 0;
  // true: take no new messages (the downstream is down); false: take them again.
  virtual void hold_back(bool hold) = 0;
  // Pull this many messages at a time from now on.
  virtual void set_window(int messages) = 0;
  // A message that left the window (a deferred verdict) is in hand again (a retry).
  virtual void message_back() = 0;
};

class DeliveryPipeline final : private Settler {
 public:
  using Clock = std::chrono::steady_clock;

  // `spec`, `status`, `transport`, `intake` and `clock` outlive the pipeline.
  DeliveryPipeline(const WorkSpec& spec, WorkHandler handler, SubscriptionStatus& status,
                   Transport& transport, IntakeControl& intake,
                   const base::Clock& clock = base::Clock::steady());
  // Waits for handlers and gives back what waits for a verdict; a Message a handler kept answers
  // shutting_down from then on.
  ~DeliveryPipeline() override;
  DeliveryPipeline(const DeliveryPipeline&) = delete;
  DeliveryPipeline& operator=(const DeliveryPipeline&) = delete;

  // --- From the intake's thread ---
  // One delivery; `pushed`: from a push consumer, which resends after ack_wait whatever waits
  // here, so a redelivery replaces the copy that waits.
  void take(nats::InboundMessage&& message, bool pushed);
  // A pulled batch (the pull window bounds it). Emptied.
  void take_all(std::vector<nats::InboundMessage>& batch);

  // --- From the supervisor's thread ---
  // In-progress acks for messages waiting for a handler or handled long, before ack_wait runs
  // out; gives back what waited past keep_alive_limit (WorkFlow::keep_alive_limit).
  void keep_alive(Clock::time_point now);
  // Upkeep of messages held for the downstream: their in-progress acks, the next probe.
  void tend_held(Clock::time_point now);
  // Sends the latest acks again (up to max_ack_pending of them, oldest first) and waits up to
  // `timeout` for the broker to apply the last: after a leader change, so that a new leader
  // does not hand what was handled here to another replica.
  void resend_recent_acks(std::chrono::milliseconds timeout);
  // Running handlers finish and deferred verdicts are awaited until `deadline`; what waited, was
  // held or still awaits its verdict then goes back to the broker at once. False when a handler
  // was still running at the deadline (join() waits for it).
  bool stop(std::chrono::milliseconds deadline);
  // After stop(): whether every handler has returned by `until` (Dispatcher::await_idle).
  bool await_idle(Clock::time_point until) { return dispatcher_.await_idle(until); }
  void join();

  // --- From any thread ---
  // While the connection is down no waiting message starts (their acks could not reach the
  // broker); running handlers finish. See consume::Dispatcher::hold.
  void connection_changed(bool connected) { dispatcher_.hold(!connected); }
  // Running handlers see their Message::stop_token() requested (the subscription is stopping).
  void request_stop();
  // Naks `message` with no delay: another replica gets it at once.
  void give_back(nats::InboundMessage&& message);
  // The window to pull with (FlowTuner).
  int window() const { return tuner_.window(); }
  bool downstream_down() const { return gate_.down(); }
  // Messages waiting for a handler, being handled, held here or awaiting a deferred verdict.
  bool busy() const {
    return dispatcher_.in_hand() > 0 || gate_.held() > 0 || awaiting_verdict() > 0;
  }
  // Messages whose handler returned Disposition::later() and whose verdict is not yet given.
  size_t awaiting_verdict() const;
  // The highest stream sequence handled here (0: none).
  uint64_t last_handled_seq() const { return last_handled_seq_.load(); }
  // Deliveries skipped because they waited since before a gap.
  uint64_t stale_skipped() const { return stale_skipped_.load(); }
  // How long a delivery may wait here before it is stale: half of ack_wait, at least three
  // heartbeats (see consume::PullEngine on gaps).
  std::chrono::milliseconds stale_after() const { return stale_after_; }

 private:
  enum class Step { next, done };
  // A message's turn on a handler thread, as the gate and the tuner need it.
  struct Turn {
    bool probe = false;
    Clock::time_point started;
    Clock::time_point tried;  // when the handler was called, for the gate
  };
  // A message whose handler returned later(), until its verdict.
  struct Deferred {
    DeliveryControl* control = nullptr;  // the message's own, which it keeps alive
    Message message;
    Turn turn;
    Clock::time_point touched;  // deferred, or its last in-progress ack
    bool overran = false;       // past keep_alive_limit: no more in-progress acks
  };

  // The stages, in order (delivery_pipeline.cc keeps this order).
  void process(nats::InboundMessage&& in, bool probe, Clock::time_point started);
  Step admit(nats::InboundMessage& in, bool probe, Clock::time_point started);
  Step screen(const Message& message, bool probe);
  // The handler's return: the verdict to carry out now, or none (it waits in deferred_, or
  // stop() took it).
  std::optional<Disposition> verdict_of(Message& message, DeliveryControl& control,
                                        const Turn& turn, Disposition returned);
  // `in_window`: the message still holds its place in the pull window (not deferred).
  Result<void> conclude(const Message& message, const Turn& turn, Disposition outcome,
                        bool in_window);
  void keep_for_retry(const Message& message, bool probe, const Disposition& outcome,
                      Clock::time_point now);
  Result<void> settle(const Message& message, Disposition outcome);
  // Term, once the dead letter (when the spec names a subject) is stored; a nak if it is not.
  Result<void> terminate(const Message& message, const std::string& why);
  Result<void> send(const std::string& reply, std::string_view body);

  // Settler: Message::settle of a deferred message [any thread].
  Result<void> settle_deferred(const DeliveryControl& delivery, Disposition verdict) override;
  // In-progress acks for deferred messages; those past keep_alive_limit and then ack_wait are
  // dropped (the broker has redelivered them).
  void keep_deferred_alive(Clock::time_point now);
  // Gives back every deferred message a verdict is not under way for (all of them when `all`).
  void give_back_deferred(bool all);

  // Carries out what the downstream gate decided: pause or resume intake, hand held messages
  // back, reject the ones that failed alone.
  void apply(DownstreamGate::Outcome outcome);
  // `in` as handlers see it, its delivery read from the reply subject.
  Message as_message(nats::InboundMessage& in, std::shared_ptr<DeliveryControl> control) const;
  void remember_ack(const std::string& reply);
  void resubmit(nats::InboundMessage&& message, consume::Dispatcher::Placement placement);

  const WorkSpec& spec_;
  const WorkHandler handler_;
  SubscriptionStatus& status_;
  Transport& transport_;
  IntakeControl& intake_;
  const base::Clock& clock_;
  // Detached first on destruction: a kept Message's calls fail from then on.
  const std::shared_ptr<DeliveryLink> link_;
  const std::chrono::milliseconds stale_after_;
  // In-progress acks go out a third of ack_wait apart: the supervisor's tick (at most a
  // quarter) and a slow API call still fit before ack_wait runs out.
  const std::chrono::milliseconds keep_alive_every_;
  FlowTuner tuner_;
  DownstreamGate gate_;
  Clock::time_point down_since_{};  // handler threads, under the gate's outcomes' order
  std::atomic<uint64_t> last_handled_seq_{0};
  std::atomic<uint64_t> stale_skipped_{0};
  // The reply subjects of the latest acks: a ring of max_ack_pending whose strings keep their
  // storage, so recording an ack allocates nothing once it has gone round.
  std::mutex recent_acks_mu_;
  std::vector<std::string> recent_acks_;
  size_t recent_acks_next_ = 0;  // where the next ack goes once it is full
  mutable std::mutex deferred_mu_;
  std::condition_variable deferred_settled_;
  std::unordered_map<const DeliveryControl*, Deferred> deferred_;
  // Last: its handler threads use everything above.
  consume::Dispatcher dispatcher_;
};

}  // namespace natsfleet::fleet
