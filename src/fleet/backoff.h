// Exponential backoff with jitter, so a fleet of replicas does not retry in lock-step.
// The jitter source is injectable for unit tests.
#pragma once

#include <chrono>
#include <functional>

namespace natsfleet::fleet {

class Backoff {
 public:
  // Returns a number in [0, 1).
  using Jitter = std::function<double()>;

  Backoff(std::chrono::milliseconds min, std::chrono::milliseconds max, Jitter jitter = {});

  // The next wait: min * 2^attempt capped at max, then scaled into [50%, 100%] by the jitter.
  std::chrono::milliseconds next();
  void reset() { attempt_ = 0; }
  int attempts() const { return attempt_; }

 private:
  std::chrono::milliseconds min_;
  std::chrono::milliseconds max_;
  Jitter jitter_;
  int attempt_ = 0;
};

}  // namespace natsfleet::fleet
