#include "fleet/backoff.h"

#include <algorithm>
#include <random>

namespace natsfleet::fleet {

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
  double delay = static_cast<double>(min_.count());
  const double cap = static_cast<double>(max_.count());
  for (int i = 0; i < attempt_ && delay < cap; ++i) delay *= 2;
  delay = std::min(delay, cap);
  ++attempt_;
  double j = std::clamp(jitter_(), 0.0, 1.0);
  return std::chrono::milliseconds(
      std::max<int64_t>(1, static_cast<int64_t>(delay * (0.5 + 0.5 * j))));
}

}  // namespace natsfleet::fleet
