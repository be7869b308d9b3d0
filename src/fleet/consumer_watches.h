// What a work's supervisor concludes from what it sees of its consumer over time, as plain state
// with the time passed in (unit-tested on simulated time): whether the work is stalled, whether
// the consumer's leader stopped redelivering, and whether the consumer has served nobody long
// enough to be made anew.
//
//   StallWatch stall(stall_after);            // on each consumer info poll:
//   if (stall.observe(now, floor, acked_here, pending + ack_pending)) the work is stalled
//   UnservedWatch unserved(replace_after);    // on each sign that nobody serves it:
//   if (unserved.evidence(now, {connected, last_served, link_changed})) look once more, delete
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace natsfleet::fleet {

using WatchClock = std::chrono::steady_clock;

// Stalled: messages wait (pending or awaiting ack) and, for `after`, neither the consumer's ack
// floor nor this replica's count of settled messages moved.
class StallWatch {
 public:
  explicit StallWatch(WatchClock::duration after) : after_(after) {}
  // The consumer was bound at `now` with this ack floor: progress counts from here.
  void restart(WatchClock::time_point now, uint64_t ack_floor);
  // One consumer info. True while stalled.
  bool observe(WatchClock::time_point now, uint64_t ack_floor, uint64_t settled_here,
               uint64_t waiting);

 private:
  const WatchClock::duration after_;
  uint64_t floor_ = 0;
  uint64_t settled_ = 0;
  WatchClock::time_point progress_{};
};

// When a replica asks a consumer's leader to step down because it stopped redelivering: its ack
// floor stays put while messages await ack, and this replica holds none of them. A new leader
// arms redelivery again (docs/design/recovery.md).
class StuckConsumerWatch {
 public:
  using Clock = WatchClock;

  explicit StuckConsumerWatch(Clock::duration after) : after_(after) {}
  // For a consumer with this ack_wait: three redelivery rounds, and at least 10 s.
  static Clock::duration after_for(std::chrono::milliseconds ack_wait) {
    return std::max<Clock::duration>(3 * ack_wait, std::chrono::seconds(10));
  }
  Clock::duration after() const { return after_; }

  // One consumer info. True when the floor has not moved for `after` with messages awaiting
  // ack and none of them here (`busy_here`: this replica is waiting on or handling some), and
  // no step-down was asked for in the last `after`. A message held that long by a slow handler
  // on another replica also qualifies: a step-down costs a leader election, nothing is lost.
  bool observe(Clock::time_point now, uint64_t ack_floor, uint64_t ack_pending, bool busy_here);

 private:
  const Clock::duration after_;
  bool seen_ = false;
  uint64_t floor_ = 0;
  Clock::time_point floor_since_{};  // since the floor last moved, or nothing awaited ack
  Clock::time_point asked_{};        // the last step-down asked for
};

// How long a bound consumer has served nobody, by the evidence the supervisor is given (a pull
// refused for want of a responder, a lookup unanswered). The count starts at the first evidence
// after the consumer last served or the link last changed (an outage says nothing about the
// consumer), and only while connected.
class UnservedWatch {
 public:
  struct Link {
    bool connected = false;
    WatchClock::time_point last_served{};   // the intake's last message or heartbeat
    WatchClock::time_point link_changed{};  // the connection last went down or came back
  };
  explicit UnservedWatch(WatchClock::duration after) : after_(after) {}
  // One piece of evidence at `now`. True once nothing was served for `after` since the count
  // began: the caller looks once more, then deletes the consumer (reset) or spares it (spare).
  bool evidence(WatchClock::time_point now, const Link& link);
  WatchClock::duration unserved(WatchClock::time_point now) const { return now - since_; }
  // A last look found it served: the count starts again from `now`.
  void spare(WatchClock::time_point now) { since_ = now; }
  // A consumer just bound or made anew has had no chance to serve yet: no count.
  void reset() { since_ = {}; }

 private:
  const WatchClock::duration after_;
  WatchClock::time_point since_{};  // the epoch: it serves, as far as this replica knows
};

}  // namespace natsfleet::fleet
