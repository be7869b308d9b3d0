#include "fleet/consumer_watches.h"

namespace natsfleet::fleet {

void StallWatch::restart(WatchClock::time_point now, uint64_t ack_floor) {
  floor_ = ack_floor;
  progress_ = now;
}

bool StallWatch::observe(WatchClock::time_point now, uint64_t ack_floor, uint64_t settled_here,
                         uint64_t waiting) {
  if (ack_floor != floor_ || settled_here != settled_ || waiting == 0) progress_ = now;
  floor_ = ack_floor;
  settled_ = settled_here;
  return now - progress_ > after_;
}

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

bool UnservedWatch::evidence(WatchClock::time_point now, const Link& link) {
  if (!link.connected || since_ == WatchClock::time_point{} || link.last_served > since_ ||
      link.link_changed > since_) {
    since_ = now;
    return false;
  }
  return now - since_ >= after_;
}

}  // namespace natsfleet::fleet
