// A JetStream consumer under supervision, at run time: bind it, consume it, hand each message to
// the handler and answer the broker, and recover from everything the broker can do to it. Which
// consumer, and how it is made right on the broker (create, update in place, migrate, retire,
// recreate), is ConsumerLifecycle's decision (fleet/consumer_lifecycle.h).
//
// Two scopes: Scope::shared is work (one durable every replica of the fleet binds to, so each
// message goes to one replica); Scope::per_replica is a JetStream broadcast (this replica's own
// named ephemeral, recreated after the last message this replica saw).
//
// A message's path, in order (the thread each stage runs on in brackets):
//   1. the intake receives it: consume::PullEngine::on_message, or QueueIntake for a push
//      consumer [nats.c's subscription thread];
//   2. install_intake's deliver lambda puts it in the dispatcher's queue: consume::Dispatcher::
//      submit [same thread; the queue is the hand-off to handler threads];
//   3. ConsumerSubscription::process [a handler thread]: skip it if it waited past a gap (stale);
//      hold it untried while the downstream is down (DownstreamGate::hold); parse its delivery;
//      dead-letter it if it was delivered again and again with no verdict;
//   4. run_handler: the user's handler (or the daemon's sink) returns a Disposition;
//   5. a retry (the downstream failed) stays in hand: DownstreamGate::failed decides, and
//      apply() pauses the intake or hands messages back; anything else is settled:
//   6. settle: ack, nak with backoff, or term after storing the dead letter; send_ack publishes
//      the answer; message_done() frees its place in the pull window.
// The two callbacks on this path (the intake's deliver and the dispatcher's process) are the two
// thread boundaries; everything after stage 3 is a plain call.
//
//   binding --bound--> bound <--> recovering ; bound <--> stalled ; any -> fatal | stopped
//
// Missed heartbeats, a reconnect, a "consumer deleted" status or a failed info poll move a bound
// subscription to recovering, which looks the consumer up: present -> pull again; missing
// (confirmed by several lookups) -> recreate or fatal per on_missing; stream gone -> fatal;
// broker unreachable -> a warning, and wait.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/backoff.h"
#include "consume/dispatcher.h"
#include "consume/intake.h"
#include "consume/pull_status.h"
#include "fleet/consumer_lifecycle.h"
#include "fleet/downstream_gate.h"
#include "fleet/stuck_consumer.h"
#include "fleet/subscription_status.h"
#include "fleet/supervised.h"
#include "nats/jetstream_api.h"
#include "nats/stream_config.h"

namespace natsfleet::fleet {

// A per-replica subscription's extras: `stream_to_create`, a stream config to create when
// spec.stream does not exist (null: none); `last_per_subject`, start with the last message of
// each subject.
struct ReplicaOptions {
  std::optional<nats::StreamConfig> stream_to_create;
  bool last_per_subject = false;
};

class ConsumerSubscription final : public Supervised {
 public:
  using Scope = ConsumerLifecycle::Scope;

  ConsumerSubscription(WorkSpec spec, WorkHandler handler, FleetContext& context,
                       Scope scope = Scope::shared, ReplicaOptions replica = {});
  ~ConsumerSubscription() override;

  void start() override;
  void connection_changed(bool connected) override;
  void begin_shutdown() override;
  bool finish_handlers(Clock::time_point deadline) override;
  void join() override;
  void wait_handlers() override;
  SubscriptionHealth health() const override;

 private:
  void run();
  void run_binding();
  void run_bound();
  void run_recovering();
  // Why the connected server cannot run this spec (several filter subjects before 2.10), or "".
  std::string unsupported_by_server();
  Result<void> bind();
  Result<std::string> locate_stream();
  void install_intake(const nats::ConsumerConfig& config);
  void poll_info();
  // The consumer's leader seems to have stopped redelivering: asks it to step down.
  void move_stuck_leader(const nats::ConsumerInfo& info);
  void log_once(const std::string& text);
  // Evidence that the consumer serves nobody (a pull refused for want of a responder, a lookup
  // unanswered): once it has lasted replace_unserved_after with nothing served meanwhile and the
  // stream answers, deletes the consumer so that the recovery makes it anew (true then).
  bool replace_if_unserved(const std::string& evidence);
  void enter_recovering(const std::string& why);
  void go_fatal(const std::string& reason);

  // One delivery (or a held message tried again: `probe`) through the handler and to the broker.
  void process(nats::InboundMessage&& msg, bool probe);
  Disposition run_handler(const Message& message, uint64_t delivered);
  // The message was stored at least `age` ago, by the broker's stored time and this host's
  // clock (true when the delivery does not say).
  static bool stored_before(const Message& message, std::chrono::milliseconds age);
  // Acks, naks or terminates (after the dead letter is stored) and counts it.
  void settle(const Message& message, const std::string& reply, Disposition outcome);
  // Carries out what the downstream gate decided: pause or resume intake, hand held messages
  // back, reject the ones that failed alone.
  void apply(DownstreamGate::Outcome outcome);
  // A held message out as a probe was settled without the handler (no longer this replica's, or
  // set aside): the gate probes with the next, or comes up with none left.
  void forget_probe(uint64_t id);
  // Supervisor-thread upkeep of held messages: in-progress acks, the next probe, health.
  void tend_held();
  // In-progress acks for messages waiting for a handler or handled long, before ack_wait runs
  // out; gives back what waited past keep_alive_limit (see WorkSpec::keep_alive_limit).
  void keep_alive();
  void on_pull_signal(const consume::PullStatus& status);
  void send_ack(const std::string& reply, std::string_view body);
  // Sizes the pull window from measured handler times: what this replica's handlers finish in
  // half of ack_wait. Large for fast handlers (throughput), small for slow ones (a message
  // waits little before its handler starts); never more than kMaxWindowBytes of messages of
  // the average size seen.
  void adapt_window(Clock::duration handler_time, size_t message_bytes);
  // Naks a message this replica will not handle, so another replica gets it at once.
  void give_back(nats::InboundMessage&& msg);
  // `in` as handlers see it, its delivery read from the reply subject; takes all of `in` but
  // its reply.
  Message as_message(nats::InboundMessage& in) const;

  // Sleeps until `d` passes or something happens (a signal, a reconnect, shutdown), keeping
  // held messages alive meanwhile.
  void wait_for(std::chrono::milliseconds d);
  bool stopping() const { return stopping_.load(); }

  const WorkSpec spec_;
  const WorkHandler handler_;
  const Scope scope_;
  const ReplicaOptions replica_;
  FleetContext& ctx_;
  SubscriptionStatus status_;
  nats::JetStreamApi api_;
  // Which consumer on which stream, made right on the broker (supervisor thread only).
  ConsumerLifecycle lifecycle_;
  std::chrono::milliseconds tick_;
  std::shared_ptr<DeliveryControl> in_progress_;

  std::thread thread_;
  std::mutex wake_mu_;
  std::condition_variable wake_;
  bool woken_ = false;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> reconnected_{false};
  // When the connection last went down or came back (steady clock ticks; 0: never).
  std::atomic<Clock::rep> link_changed_{0};

  std::mutex signal_mu_;
  std::optional<consume::PullStatus> signal_;  // the latest unsettled status from the engine

  std::atomic<int64_t> handler_ns_avg_{0};
  std::atomic<int64_t> bytes_avg_{0};  // payload bytes, averaged as handler times are
  std::atomic<uint64_t> handled_since_adapt_{0};
  std::atomic<int> window_{0};  // the last window adapt_window set (0: none yet)
  const std::chrono::milliseconds keep_alive_every_;
  Clock::time_point last_keep_alive_{};

  std::atomic<uint64_t> last_handled_seq_{0};

  std::mutex engine_mu_;
  std::unique_ptr<consume::Intake> engine_;
  std::string deliver_subject_;  // of the intake; empty when pulling
  std::unique_ptr<consume::Dispatcher> dispatcher_;
  DownstreamGate gate_;
  // A message that waited this long since it was received (or last kept alive) is stale: see
  // consume::PullEngine on gaps. 0: never.
  std::chrono::milliseconds stale_after_{0};
  uint64_t gaps_logged_ = 0;
  // The reply subjects of the latest acks, sent again after a recovery or a leader change: an
  // ack that reached a consumer leader just before it died is lost, and the next leader would
  // hand what was handled to another replica. The broker holds at most max_ack_pending unacked,
  // so that many are kept: a ring whose strings keep their storage, so recording an ack
  // allocates nothing once it has gone round.
  std::mutex recent_acks_mu_;
  std::vector<std::string> recent_acks_;  // grows to max_ack_pending, then wraps
  size_t recent_acks_next_ = 0;           // where the next ack goes once it is full
  void resend_recent_acks();
  std::atomic<uint64_t> stale_skipped_{0};
  Clock::time_point down_since_{};

  // Supervisor-thread state.
  std::set<std::string> logged_;
  // A consumer leader that stopped redelivering is asked to step down (fleet/stuck_consumer.h).
  StuckConsumerWatch stuck_watch_{StuckConsumerWatch::after_for(spec_.ack_wait)};
  std::string recovering_reason_;
  uint64_t last_floor_seen_ = 0;
  uint64_t last_acked_seen_ = 0;
  std::string leader_seen_;  // the consumer's leader at the last poll that named one
  Clock::time_point last_info_{};
  Clock::time_point last_progress_{};
  // Pulls answered "no responders" back to back wait longer each time (see run_bound).
  base::Backoff unanswered_backoff_;
  Clock::time_point unanswered_at_{};
  // Since when the consumer has served nothing, by the evidence replace_if_unserved() was given
  // (the epoch: it serves, as far as this replica knows).
  Clock::time_point unserved_since_{};
  // replace_if_unserved() deleted the consumer: the recovery makes it anew without a lookup.
  bool deleted_here_ = false;
};

}  // namespace natsfleet::fleet
