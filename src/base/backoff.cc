#include "base/backoff.h"

#include <algorithm>
#include <random>

namespace natsfleet::base {

std::chrono::milliseconds exponential_delay(std::chrono::milliseconds min,
                                            std::chrono::milliseconds max, uint64_t attempt) {
  if (min <= std::chrono::milliseconds::zero()) return std::chrono::milliseconds::zero();
  if (min >= max) return max;
  std::chrono::milliseconds delay = min;
  // Doubling stops at the cap, which takes at most 63 steps however large attempt is.
  for (uint64_t i = 0; i < attempt && delay < max; ++i) delay = delay > max / 2 ? max : delay * 2;
  return std::min(delay, max);
}

Backoff::Backoff(std::chrono::milliseconds min, std::chrono::milliseconds max, Jitter jitter)
    : min_(std::max(min, std::chrono::milliseconds(1))),
      max_(std::max(max, min_)),
      jitter_(std::move(jitter)) {
  if (!jitter_) {
    jitter_ = [] {
      thread_local std::mt19937_64 rng{std::random_device{}()};
      return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    };
  }
}

std::chrono::milliseconds Backoff::next() {
  const auto delay =
      static_cast<double>(exponential_delay(min_, max_, static_cast<uint64_t>(attempt_)).count());
  ++attempt_;
  const double j = std::clamp(jitter_(), 0.0, 1.0);
  return std::chrono::milliseconds(
      std::max<int64_t>(1, static_cast<int64_t>(delay * (0.5 + 0.5 * j))));
}

}  // namespace natsfleet::base
