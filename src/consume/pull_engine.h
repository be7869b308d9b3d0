// The continuous pull loop nats.c 3.4.1 lacks: pipelined pull requests on a private inbox, with
// idle heartbeats, re-pulled before the buffer runs dry and re-issued after anything that may
// have dropped the waiting requests (a reconnect, a new leader, a silent expiry).
//
// A gap: with requests outstanding, nothing (no message, no heartbeat) arrived for half of
// ack_wait (at least three heartbeats), because this process was paused or its link was cut.
// What arrives after a gap may have been sent before it, and the broker has likely handed it to
// another replica since. So the message that shows the gap is not delivered, the inbox is
// replaced (nats.c drops whatever else is still queued for the old one, unseen), and pulls start
// afresh on the new inbox; the broker's redelivery decides who handles what was skipped.
//
// Thread use: the inbox is read by the owner's threads (read(): an idle handler thread, the
// supervisor between ticks) or, unless Options::owner_reads, by a thread of the engine's own;
// message_done() is called from handler threads; tick() and restart_pulls() from the owner's
// supervisor thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "consume/inbox_link.h"
#include "consume/intake.h"
#include "consume/pull_status.h"
#include "consume/pull_window.h"

namespace natsfleet::consume {

class PullEngine final : public Intake {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::string stream;
    std::string consumer;
    int batch = 64;  // at most this many messages requested or buffered at once
    std::chrono::milliseconds expires{30000};
    std::chrono::milliseconds heartbeat{5000};
    // The consumer's ack_wait, for the gap rule above; 0: no gap is ever called.
    std::chrono::milliseconds ack_wait{0};
    // The time source (tests pass a base::ManualClock).
    const base::Clock* clock = &base::Clock::steady();
    // The owner calls read(); otherwise the engine reads its inbox on a thread of its own.
    bool owner_reads = false;
  };
  // Ordinary messages, in arrival order (to hand to handlers; call message_done() when each is
  // finished). The callee moves out what it takes.
  using Deliver = std::function<void(std::vector<nats::InboundMessage>&)>;
  // A status the engine cannot settle itself: consumer deleted, no responders, bad request,
  // push consumer, leadership change, max waiting.
  using Signal = std::function<void(const PullStatus&)>;

  PullEngine(std::unique_ptr<InboxLink> link, Options options, Deliver deliver, Signal signal);
  ~PullEngine() override;
  PullEngine(const PullEngine&) = delete;
  PullEngine& operator=(const PullEngine&) = delete;

  // Subscribes the inbox and sends the first pull.
  Result<void> start() override;
  // Unsubscribes: no more deliveries once it returns (but for a read under way on the calling
  // thread, which delivers nothing more either).
  void stop() override;
  // Reads what reached the inbox (a burst, waiting up to `wait` for its first message) and
  // delivers it. One reader at a time. false when it could not read: another thread reads,
  // nothing runs, or the inbox was closed (a fresh one follows); the caller waits before asking
  // again.
  bool read(std::chrono::milliseconds wait) override { return read_burst(wait) >= 0; }
  void drain() override;
  // Sends no more pull requests; what the broker still sends for earlier ones is delivered.
  void stop_pulling() override;
  // Messages asked for and not yet delivered (nor released by a status).
  int64_t outstanding() const override;

  void message_done() override;
  void message_back() override;
  // Forgets outstanding requests (they may be gone) and pulls afresh.
  void restart_pulls() override;
  // Periodic upkeep: forget requests that must have expired, refill.
  void tick() override;
  // Requests are outstanding and the broker has been silent for two heartbeats.
  bool heartbeat_missed() const override;
  int64_t buffered() const;
  // Changes how many messages may be requested or buffered at once (at least 1).
  void set_window(int messages) override;
  // Held back, the window is 2: what is held stays buffered, and one spare message may come.
  void hold_back(bool on) override;
  // Stepped back, no pull is sent and the inbox is replaced: nats-server skips a waiting request
  // whose reply subject has no listener, so the requests outstanding deliver nothing more.
  void step_back(bool on) override;
  int window() const;
  uint64_t pulls_sent() const;
  // Gaps seen, and messages not delivered because they came after one or on an old inbox.
  uint64_t gaps() const override;
  uint64_t stale_dropped() const override;
  Clock::time_point last_served() const override;
  // How long a silence must last to be a gap (0: never).
  std::chrono::milliseconds gap_after() const { return gap_after_; }

 private:
  using Listenings = std::vector<std::unique_ptr<InboxLink::Listening>>;
  // A burst from the inbox: statuses are settled here, ordinary messages delivered together.
  void on_batch(std::vector<nats::InboundMessage>& batch, uint64_t generation);
  // Closes `sub` and keeps it until no read is under way (one may be using it).
  void retire_locked(std::unique_ptr<InboxLink::Listening> sub);
  // The retired subscriptions no read can be using: to free outside the lock.
  Listenings freeable_locked();
  // read(): how many messages it read, or -1 when it could not.
  int read_burst(std::chrono::milliseconds wait);
  // Without Options::owner_reads: reads until stopped.
  void read_until_stopped();
  // A gap (see above) as of `at`: marks the inbox for replacement and forgets the requests.
  bool gap_locked(Clock::time_point at);
  Clock::time_point now() const { return options_.clock->now(); }
  // Subscribes a fresh inbox (the generation after a gap) and drops the old subscription.
  Result<void> subscribe_inbox();
  // Computes under the lock how much to ask for (0: nothing now) and the inbox to ask for it on;
  // send_pull() sends it outside the lock.
  int64_t next_pull_locked(std::string& reply);
  void send_pull(int64_t want, const std::string& reply);
  void refill();
  std::string pull_body(int64_t batch) const;

  const std::unique_ptr<InboxLink> link_;
  const Options options_;
  Deliver deliver_;
  Signal signal_;
  const std::string pull_subject_;
  std::string inbox_;

  const std::chrono::milliseconds gap_after_;

  mutable std::mutex mu_;
  PullWindow flow_;  // what is asked for and in hand, and when to ask again
  bool running_ = false;
  bool pulling_ = true;
  bool stepped_back_ = false;
  uint64_t generation_ = 0;     // of the current inbox; older ones deliver nothing
  bool new_inbox_due_ = false;  // a gap was seen: tick() subscribes a fresh inbox
  uint64_t stale_dropped_ = 0;
  Clock::time_point served_at_{};

  std::unique_ptr<InboxLink::Listening> subscription_;  // the current inbox's
  Listenings retired_;                                  // closed; freed once no read is under way
  bool reading_ = false;
  std::thread::id reader_id_;                      // of the read under way
  std::condition_variable read_done_;              // reading_ became false
  std::condition_variable changed_;                // a new inbox, or stopped (the own reader)
  std::vector<nats::InboundMessage> read_buffer_;  // the reader's
  std::thread reader_;                             // without Options::owner_reads
};

}  // namespace natsfleet::consume
