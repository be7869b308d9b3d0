// Which key lanes of an ordered work are due a handler thread: ready now, waiting until a
// retry's time, or running (a handler has its front message). Not synchronized: its owner's
// lock guards it. The time is passed in, so its rules are unit-tested on simulated time.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace natsfleet::fleet {

class PartitionReader;

class LaneSchedule {
 public:
  using Clock = std::chrono::steady_clock;
  // A key of a partition's reader; stale once the partition's reader changed.
  struct Lane {
    int partition = 0;
    std::string key;
    const PartitionReader* reader = nullptr;
  };
  // Whether a lane still has work of a reader that still owns it.
  using Live = std::function<bool(const Lane&)>;

  // The lane may run now, after those already ready.
  void ready(Lane lane) { ready_.push_back(std::move(lane)); }
  // The lane may run from `at` on (a retry's delay).
  void later(Lane lane, Clock::time_point at) { later_.emplace(at, std::move(lane)); }
  // The next lane that may run at `now`: those due by then join the ready ones first; a lane
  // running now, or one `live` rejects, is dropped (a running lane is made ready by its verdict).
  std::optional<Lane> next(Clock::time_point now, const Live& live);
  // A handler has the lane's front message, until finished().
  void start(const Lane& lane) { running_.insert({lane.partition, lane.key}); }
  void finished(const Lane& lane) { running_.erase({lane.partition, lane.key}); }
  bool any_running() const { return !running_.empty(); }
  // Lanes waiting for a retry's time.
  size_t waiting() const { return later_.size(); }
  // When the first waiting lane is due; none while nothing waits.
  std::optional<Clock::time_point> next_due() const;

 private:
  std::deque<Lane> ready_;
  std::multimap<Clock::time_point, Lane> later_;
  std::set<std::pair<int, std::string>> running_;
};

}  // namespace natsfleet::fleet
