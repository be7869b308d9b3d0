#include "health/latency_histogram.h"

#include <algorithm>

namespace natsfleet::health {
namespace {

// The bounds in integer nanoseconds, so a latency of exactly 5ms lands in le="0.005" without
// depending on floating-point rounding.
constexpr std::array<int64_t, LatencyHistogram::kUpperBoundsSeconds.size()> kUpperBoundsNs = [] {
  std::array<int64_t, LatencyHistogram::kUpperBoundsSeconds.size()> ns{};
  for (std::size_t i = 0; i < ns.size(); ++i) {
    // Every bound is a whole number of microseconds; rounding removes the binary fraction error.
    ns[i] = static_cast<int64_t>(LatencyHistogram::kUpperBoundsSeconds[i] * 1e6 + 0.5) * 1000;
  }
  return ns;
}();

}  // namespace

void LatencyHistogram::observe(std::chrono::nanoseconds latency) noexcept {
  const int64_t ns = std::max<int64_t>(latency.count(), 0);
  const auto bound = std::lower_bound(kUpperBoundsNs.begin(), kUpperBoundsNs.end(), ns);
  const auto index = static_cast<std::size_t>(bound - kUpperBoundsNs.begin());
  buckets_[index].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
}

LatencyHistogram::Snapshot LatencyHistogram::snapshot() const noexcept {
  Snapshot s;
  uint64_t running = 0;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = running;
  }
  s.count = running;
  s.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
  return s;
}

}  // namespace natsfleet::health
