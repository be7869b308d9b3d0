#include "fleet/ordered/lane_schedule.h"

namespace natsfleet::fleet {

std::optional<LaneSchedule::Lane> LaneSchedule::next(Clock::time_point now, const Live& live) {
  while (!later_.empty() && later_.begin()->first <= now) {
    ready_.push_back(std::move(later_.begin()->second));
    later_.erase(later_.begin());
  }
  while (!ready_.empty()) {
    Lane lane = std::move(ready_.front());
    ready_.pop_front();
    if (running_.count({lane.partition, lane.key})) continue;
    if (!live(lane)) continue;
    return lane;
  }
  return std::nullopt;
}

std::optional<LaneSchedule::Clock::time_point> LaneSchedule::next_due() const {
  if (later_.empty()) return std::nullopt;
  return later_.begin()->first;
}

}  // namespace natsfleet::fleet
