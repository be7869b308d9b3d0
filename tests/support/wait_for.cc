#include "support/wait_for.h"

#include <algorithm>
#include <thread>

namespace natsfleet::testing {

bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
              std::chrono::milliseconds interval) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return condition();
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(interval, deadline - now));
  }
}

}  // namespace natsfleet::testing
