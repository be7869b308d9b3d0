// A Prometheus-style latency histogram that many handler threads update without a lock.
// Buckets are fixed (seconds): 1ms .. 10s plus +Inf, wide enough for sinks from a local file to a
// slow HTTP endpoint, so every subscription shares one layout and dashboards can aggregate them.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace natsfleet::health {

class LatencyHistogram {
 public:
  // Upper bounds (inclusive, "le") of the finite buckets; the last bucket is +Inf.
  static constexpr std::array<double, 12> kUpperBoundsSeconds = {
      0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  static constexpr std::size_t kBucketCount = kUpperBoundsSeconds.size() + 1;

  struct Snapshot {
    // Cumulative counts per bucket, in kUpperBoundsSeconds order then +Inf; the last equals count.
    std::array<uint64_t, kBucketCount> cumulative{};
    uint64_t count = 0;
    double sum_seconds = 0;
  };

  // Safe from any thread. A negative latency (a clock step) counts as zero.
  void observe(std::chrono::nanoseconds latency) noexcept;

  // The count always equals the +Inf bucket, even while other threads observe; the sum may lag
  // or lead the buckets by the observations in flight.
  Snapshot snapshot() const noexcept;

 private:
  // Per-bucket (not cumulative) counts: one increment per observation keeps observe() cheap.
  std::array<std::atomic<uint64_t>, kBucketCount> buckets_{};
  std::atomic<uint64_t> sum_ns_{0};
};

}  // namespace natsfleet::health
