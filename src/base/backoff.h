// Exponential backoff: the delay before the next retry doubles from a minimum up to a cap.
// Backoff adds jitter, so a fleet of replicas does not retry in lock-step; its jitter source is
// injectable for unit tests.
//
//   base::Backoff backoff(100ms, 10s);
//   while (!try_once()) sleep_for(backoff.next());
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace natsfleet::base {

// min * 2^attempt, capped at max; attempt 0 is min. A min of zero or less stays zero; a min
// above max is max. Exact in milliseconds, never overflows, whatever the attempt.
std::chrono::milliseconds exponential_delay(std::chrono::milliseconds min,
                                            std::chrono::milliseconds max, uint64_t attempt);

class Backoff {
 public:
  // Returns a number in [0, 1).
  using Jitter = std::function<double()>;

  // min is at least 1ms and max at least min. No jitter source: a random one.
  Backoff(std::chrono::milliseconds min, std::chrono::milliseconds max, Jitter jitter = {});

  // The next wait: exponential_delay(min, max, attempts()) scaled into [50%, 100%] by the jitter,
  // at least 1ms.
  std::chrono::milliseconds next();
  void reset() { attempt_ = 0; }
  int attempts() const { return attempt_; }

 private:
  std::chrono::milliseconds min_;
  std::chrono::milliseconds max_;
  Jitter jitter_;
  int attempt_ = 0;
};

}  // namespace natsfleet::base
