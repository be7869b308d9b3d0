// The one way tests wait: poll a condition until it holds or a deadline passes, never a bare
// sleep.
//
//   ASSERT_TRUE(wait_for([&] { return readyz(port) == 200; }, 15s)) << daemon.log();
#pragma once

#include <chrono>
#include <functional>

namespace natsfleet::testing {

// Polls `condition` every `interval` until it returns true or `timeout` passes; returns the last
// value (so a condition that holds at the deadline still counts).
bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
              std::chrono::milliseconds interval = std::chrono::milliseconds(10));

}  // namespace natsfleet::testing
