// Tells "the downstream is down" from "this message is bad" for one work subscription, and keeps
// the messages an outage holds. Handlers report each outcome; the gate answers what to do.
//
//   up ----retryable failures of 2 different messages, no success between----> down
//   down: fresh messages are held untried; one held message at a time is tried again (a probe),
//         oldest first, after a jittered backoff that honours Retry-After
//   down --a success--> verifying: the messages whose probe failed, those whose failures
//         called the outage and those in flight when it began are tried again alone; one that
//         fails now (the downstream just worked) failed by itself: it is rejected
//   verifying --all tried--> up: every other held message is handed back to run at full speed
//
// A message that fails while others succeed takes the rejected path (a nak that uses up a
// delivery): that is how a message which crashes a worker or times out an endpoint every time
// is found out, instead of holding the subscription down for ever. One message that keeps
// failing with nothing to compare it with is tried again alone, then counted as an outage,
// unless it was found out before (it failed alone once already): then it is rejected again, so
// a poison that comes back when nothing else is flowing still reaches max_deliver.
//
// Pure logic: time comes in as arguments, so unit tests drive it. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/backoff.h"
#include "nats/connection.h"

namespace natsfleet::fleet {

class DownstreamGate {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  struct Options {
    std::chrono::milliseconds retry_min{500};
    std::chrono::milliseconds retry_max{30000};
    // Held messages get an in-progress ack this often (a third of ack_wait), so the broker
    // neither redelivers them elsewhere nor counts a delivery.
    std::chrono::milliseconds in_progress_every{10000};
    base::Backoff::Jitter jitter;  // default: random
  };

  enum class Change { none, went_down, went_up };

  // What a failure or a success settles.
  struct Outcome {
    Change change = Change::none;
    std::vector<nats::InboundMessage> retry;   // hand to the handlers again (no delivery used)
    std::vector<nats::InboundMessage> reject;  // failed by themselves: nak (uses a delivery)
    // went_up because nothing is left to probe with (dropped()), not because a try succeeded.
    bool emptied = false;
  };

  explicit DownstreamGate(Options options);

  // True from the outage until every held message is handed back: fresh messages are held
  // untried meanwhile. Lock-free: read for every message.
  bool down() const { return down_.load(std::memory_order_acquire); }
  // True when nothing is held, failing or being tried: successes need not be reported.
  bool quiet() const { return quiet_.load(std::memory_order_acquire); }
  size_t held() const;
  std::string last_error() const;

  // A fresh message arrived while down(): keep it for a later probe. Hands it back when the
  // gate came up in the meantime (run it as usual).
  std::optional<nats::InboundMessage> hold(nats::InboundMessage&& message, uint64_t id,
                                           TimePoint now);
  // The handler answered "retry" for message `id` (a probe when the gate handed it out).
  Outcome failed(nats::InboundMessage&& message, uint64_t id, bool probe, std::string error,
                 std::chrono::milliseconds retry_after, TimePoint now);
  // The downstream answered (ack, or the handler's own nak or term) a message handed to the
  // handler at `tried`. A success tried before the latest failure was in flight with it (a
  // worker answers one message, then dies on the next with a third in hand) and says nothing
  // of the downstream since: unless it was a probe, it settles nothing.
  Outcome succeeded(bool probe, TimePoint tried, TimePoint now);
  // The probe `id` was not tried: the message is no longer this replica's (the broker gave it
  // to another replica meanwhile). The next held message is due at once; with none left, the
  // gate is up again (went_up): nothing is held to probe with, so fresh messages are tried.
  Outcome dropped(uint64_t id, TimePoint now);
  // The next held message to try, when one is due; at most one is out at a time.
  std::optional<nats::InboundMessage> next_probe(TimePoint now);
  // Reply subjects of held messages whose in-progress ack is due (their clocks restart now).
  std::vector<std::string> in_progress_due(TimePoint now);
  // Everything held (shutdown): the caller gives it back to the broker.
  std::vector<nats::InboundMessage> take_all();
  // Everything held, for the caller to hand to another replica; nothing while a probe is out
  // (its verdict comes first). Either way, the gate is up and quiet after taking anything.
  std::vector<nats::InboundMessage> hand_over();

 private:
  enum class State { up, down, verifying };
  struct Held {
    nats::InboundMessage message;
    uint64_t id = 0;
    int failures = 0;  // retryable failures while held
    // Tried alone before the others are released on recovery: it failed as a probe, or it was
    // one of the messages whose failures called the outage (the culprit may be among them).
    bool try_alone = false;
    TimePoint retry_at{};       // a lone suspect's next try (state up)
    TimePoint last_progress{};  // last in-progress ack
  };

  // failed() in each state, under mu_: `h` is the message that failed, its failures counted.
  void failed_while_up(Held&& h, std::chrono::milliseconds retry_after, TimePoint now,
                       Outcome& out);
  void failed_while_down(Held&& h, bool probe, std::chrono::milliseconds retry_after, TimePoint now,
                         Outcome& out);
  void failed_while_verifying(Held&& h, bool probe, std::chrono::milliseconds retry_after,
                              TimePoint now, Outcome& out);
  void go_down(TimePoint now, std::chrono::milliseconds retry_after, Outcome& out);
  // Remembers a message that failed by itself (bounded: the most recent ones).
  void convict(uint64_t id);
  bool convicted(uint64_t id) const;
  void finish_verifying(Outcome& out);
  bool verify_left() const;
  void publish_flags();
  std::vector<nats::InboundMessage> take_all_locked();

  const Options options_;
  mutable std::mutex mu_;
  State state_ = State::up;
  std::deque<Held> held_;
  std::vector<uint64_t> failing_;   // distinct ids that failed since the last success
  TimePoint last_failure_{};        // when the latest failure was reported
  std::deque<uint64_t> convicted_;  // ids found to fail by themselves, newest last
  bool probe_out_ = false;
  Held probe_;  // bookkeeping of the message out as a probe (its message is with the handler)
  bool last_verify_failed_ = false;
  TimePoint next_probe_{};
  base::Backoff backoff_;
  std::string last_error_;
  std::atomic<bool> down_{false};
  std::atomic<bool> quiet_{true};
};

}  // namespace natsfleet::fleet
