// When a replica asks a consumer's leader to step down because it stopped redelivering: its ack
// floor stays put while messages await ack, and this replica holds none of them. nats-server
// before 2.10.26 could leave a consumer leader that never redelivers again after leader changes
// (nats-server #6387 and #6469): a message delivered to a replica that died then waits forever,
// and the work looks stalled with "1 awaiting ack". A new leader arms redelivery again.
//
//   StuckConsumerWatch watch(StuckConsumerWatch::after_for(ack_wait));
//   if (watch.observe(now, info.ack_floor_stream_seq, info.num_ack_pending, in_hand > 0))
//     api.step_down_consumer_leader(stream, consumer);
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace natsfleet {

class StuckConsumerWatch {
 public:
  using Clock = std::chrono::steady_clock;

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

}  // namespace natsfleet
