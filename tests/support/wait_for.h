// The one way tests wait: poll a condition until it holds or a deadline passes, never a bare
// sleep.
//
//   ASSERT_TRUE(wait_for([&] { return readyz(port) == 200; }, 15s)) << daemon.log();
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>

namespace natsfleet::testing {

// Polls `condition` every `interval` until it returns true or `timeout` passes; returns the last
// value (so a condition that holds at the deadline still counts).
bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
              std::chrono::milliseconds interval = std::chrono::milliseconds(10));

// The state letter of /proc/<pid>/stat ('T' or 't': stopped), '?' when unreadable.
char process_state(pid_t pid);
// SIGSTOP is asynchronous: a process signalled may still run for a moment (read a message, write
// a line). Waits until it is stopped; false if it is not within `timeout`.
bool wait_stopped(pid_t pid, std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace natsfleet::testing
