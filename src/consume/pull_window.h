// The pull engine's flow control as plain state: how many messages are asked for and in hand,
// when to ask again and for how many, when the broker's silence is a gap or a missed heartbeat,
// and when outstanding requests must have expired. Every decision takes the time as an argument,
// so the rules are unit-tested without a broker or a clock (PullEngine holds the lock and the
// clock around it).
//
//   PullWindow w({.window = 64, .expires = 30s, .heartbeat = 5s, .gap_after = 15s});
//   if (int64_t n = w.next_pull(now)) send a pull for n;
//   w.delivered(now); ... w.done();
#pragma once

#include <chrono>
#include <cstdint>

namespace natsfleet::consume {

class PullWindow {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    int64_t window = 64;  // at most this many messages asked for or in hand at once
    std::chrono::milliseconds expires{30'000};
    std::chrono::milliseconds heartbeat{5'000};
    std::chrono::milliseconds gap_after{0};  // 0: a silence is never a gap
  };

  explicit PullWindow(Options options);

  // How many to ask for now, already counted as requested (0: none). Pipelining: once half the
  // window is free, so the next batch is in flight while the current one is handled.
  int64_t next_pull(Clock::time_point now);
  // next_pull would ask for something now (it reads no clock).
  bool pull_due() const {
    return requested_ + in_hand_ <= window_ / 2;  // window_ >= 1: so below the window too
  }
  // A message arrived for an outstanding request; it is in hand until done().
  void delivered(Clock::time_point now);
  void done();
  // A message done() with is in hand again (it may take in_hand past the window for a while).
  void taken() { ++in_hand_; }
  // The broker ended requests holding `messages` undelivered (expired, or done early).
  void released(uint64_t messages);
  // The pull next_pull just counted could not be sent: as if it had not been asked for.
  void unsent(int64_t messages);
  // A status or heartbeat: the broker is alive.
  void heard(Clock::time_point now);
  // Forgets outstanding requests (they may be gone), as of `now`. Those sent on the same inbox
  // may still deliver until they expire; new_inbox() forgets them for good (the old inbox has
  // no listener).
  void forget_requests(Clock::time_point now);
  void new_inbox(Clock::time_point now);
  // When the oldest request that may still deliver was sent: a message arriving now was sent by
  // the broker no earlier, so its ack_wait has run for at most `now - pulled_since()`.
  Clock::time_point pulled_since() const { return oldest_live_; }
  // With requests outstanding, nothing was heard for gap_after: the requests are forgotten and
  // true is returned (once per gap).
  bool gap(Clock::time_point now);
  // Every request went out at or before the last pull, so once expires (and a heartbeat) has
  // passed since, none can still deliver: forgets them. True when it did.
  bool expire(Clock::time_point now);
  // Requests are outstanding and the broker has been silent for two heartbeats.
  bool heartbeat_missed(Clock::time_point now) const;

  // A new size (at least 1); while held back it applies once released.
  void set_window(int64_t messages);
  // Held back, the window is at most 2: what is in hand stays, and one spare message may come.
  void hold_back(bool on);

  int64_t window() const { return window_; }
  int64_t requested() const { return requested_; }
  int64_t in_hand() const { return in_hand_; }
  uint64_t pulls() const { return pulls_; }
  uint64_t gaps() const { return gaps_; }

 private:
  const Options options_;
  int64_t window_;
  int64_t normal_window_;  // while held back: the window to return to
  bool held_back_ = false;
  int64_t requested_ = 0;  // asked for and not yet delivered nor released
  int64_t in_hand_ = 0;    // delivered and not yet done
  Clock::time_point last_heard_{};
  Clock::time_point last_pull_{};
  Clock::time_point oldest_live_{};     // see pulled_since()
  Clock::time_point forgotten_live_{};  // forgotten requests may deliver until then
  uint64_t pulls_ = 0;
  uint64_t gaps_ = 0;
};

}  // namespace natsfleet::consume
