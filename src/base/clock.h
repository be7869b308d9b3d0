// The time the core reads, as one object handed down from the Fleet: the steady clock in service,
// a hand-moved ManualClock in unit tests, so rules about time (stale deliveries, keep-alive,
// window sizing, heartbeats) are tested on simulated time without waiting.
//
//   const base::Clock& clock = base::Clock::steady();
//   const auto started = clock.now();
#pragma once

#include <atomic>
#include <chrono>

namespace natsfleet::base {

class Clock {
 public:
  using duration = std::chrono::steady_clock::duration;
  using time_point = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  // Never goes back. Safe from any thread.
  virtual time_point now() const = 0;

  // The process's steady clock; lives as long as the process.
  static const Clock& steady();
};

// A clock that moves only when told. Safe from any thread.
class ManualClock final : public Clock {
 public:
  // Starts an hour past the steady clock's epoch, so "an hour ago" is still a valid time.
  ManualClock() : ticks_((time_point{} + std::chrono::hours(1)).time_since_epoch().count()) {}
  time_point now() const override { return time_point(duration(ticks_.load())); }
  void advance(duration by) { ticks_.fetch_add(by.count()); }

 private:
  std::atomic<duration::rep> ticks_;
};

}  // namespace natsfleet::base
