// What a service manager learns of the daemon, through the sd_notify protocol (a datagram to the
// unix socket in $NOTIFY_SOCKET; no libsystemd): READY=1 once every subscription is bound,
// WATCHDOG=1 while the fleet answers its health and is live, STOPPING=1 when shutdown begins,
// STATUS= a line for `systemctl status`. With no $NOTIFY_SOCKET every call does nothing.
//
//   ServiceNotifier notifier = ServiceNotifier::from_environment();
//   notifier.send("READY=1\nSTATUS=3 subscriptions bound");
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "natsfleet/error.h"

namespace natsfleet::daemon {

class ServiceNotifier {
 public:
  // Reads $NOTIFY_SOCKET, and $WATCHDOG_USEC when $WATCHDOG_PID is unset or this process.
  static ServiceNotifier from_environment();
  ServiceNotifier() = default;
  ServiceNotifier(std::string socket_path, std::optional<std::chrono::microseconds> watchdog);

  bool enabled() const { return !socket_path_.empty(); }
  // How often the manager expects a WATCHDOG=1: none when it set no watchdog.
  std::optional<std::chrono::microseconds> watchdog() const { return watchdog_; }
  // One datagram of newline-separated assignments. An error names the socket.
  Result<void> send(const std::string& state) const;

 private:
  std::string socket_path_;  // "@name" is an abstract socket
  std::optional<std::chrono::microseconds> watchdog_;
};

}  // namespace natsfleet::daemon
