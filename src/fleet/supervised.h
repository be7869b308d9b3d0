// What the Fleet supervises: one subscription with its own supervisor thread.
//
// Lifecycle: start() -> connection_changed()* -> begin_shutdown() -> finish_handlers()
//            -> (the Fleet closes the connection) -> join() -> await_handlers()
//            -> the destructor (which waits for every handler).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/clock.h"
#include "natsfleet/fleet.h"
#include "natsfleet/health.h"

namespace spdlog {
class logger;
}

namespace natsfleet::nats {
class Connection;
}

namespace natsfleet::fleet {

using Clock = std::chrono::steady_clock;

// What every subscription shares with its Fleet.
struct FleetContext {
  FleetOptions options;
  nats::Connection* connection = nullptr;  // set before any start(); outlives the subscriptions
  std::function<void(const std::string& subscription, const std::string& reason)> fatal;
  std::shared_ptr<spdlog::logger> log;
  // What every subscription reads the time from (waits are on the steady clock).
  const base::Clock* clock = &base::Clock::steady();
};

class Supervised {
 public:
  virtual ~Supervised() = default;
  virtual void start() = 0;
  // From nats.c's threads: keep it short.
  virtual void connection_changed(bool connected) = 0;
  // Stop pulling and binding; returns at once.
  virtual void begin_shutdown() = 0;
  // Let running handlers finish until `deadline`, nak what never started. False on overrun.
  virtual bool finish_handlers(Clock::time_point deadline) = 0;
  // Wait for the supervisor thread (the connection is closed by then, so it ends quickly).
  virtual void join() = 0;
  // Waits until `until` for handlers that overran the shutdown deadline. False when one still
  // runs then: the destructor waits for it (nothing it uses is freed under it).
  virtual bool await_handlers(Clock::time_point until) = 0;
  virtual SubscriptionHealth health() const = 0;
};

}  // namespace natsfleet::fleet
