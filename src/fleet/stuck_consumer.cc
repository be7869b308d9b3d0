#include "fleet/stuck_consumer.h"

namespace natsfleet {

bool StuckConsumerWatch::observe(Clock::time_point now, uint64_t ack_floor, uint64_t ack_pending,
                                 bool busy_here) {
  if (!seen_ || ack_floor != floor_ || ack_pending == 0) {
    seen_ = true;
    floor_ = ack_floor;
    floor_since_ = now;
    return false;
  }
  if (busy_here || now - floor_since_ < after_) return false;
  if (asked_ != Clock::time_point{} && now - asked_ < after_) return false;
  asked_ = now;
  return true;
}

}  // namespace natsfleet
