#include "support/wait_for.h"

#include <algorithm>
#include <fstream>
#include <string>
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

char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');  // the command name may hold spaces and parentheses
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

bool wait_stopped(pid_t pid, std::chrono::milliseconds timeout) {
  return wait_for(
      [&] {
        const char state = process_state(pid);
        return state == 'T' || state == 't';
      },
      timeout, std::chrono::milliseconds(1));
}

}  // namespace natsfleet::testing
