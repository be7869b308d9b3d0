// Runs a piece of a test in a child process whose address space is capped a little above what it
// uses now, so that new threads (8 MiB of stack each) are refused after a few: how a test sees
// what happens when the system will not start a thread. Not under the sanitizers, which reserve
// terabytes of shadow memory.
//
//   int code = run_with_few_threads([] { return Dispatcher(...) ... ? 0 : 1; });
#pragma once

#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

namespace natsfleet::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kAddressLimitWorks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kAddressLimitWorks = false;
#else
inline constexpr bool kAddressLimitWorks = true;
#endif
#else
inline constexpr bool kAddressLimitWorks = true;
#endif

// The process's virtual size in bytes (VmSize), 0 when unknown.
inline unsigned long long virtual_size() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  return 0;
}

// The child's exit code, or 128 + signal when it died of one (134: an exception escaped).
inline int run_with_few_threads(const std::function<int()>& body,
                                unsigned long long headroom = 256ull << 20) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // One malloc arena: each extra one reserves 64 MiB and would eat the headroom by itself.
    ::mallopt(M_ARENA_MAX, 1);
    const unsigned long long cap = virtual_size() + headroom;
    const rlimit limit{cap, cap};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(99);
    // As in a daemon's thread: an exception that escapes terminates (gtest would catch it).
    const int code = [&]() noexcept { return body(); }();
    std::fflush(nullptr);
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace natsfleet::testing
