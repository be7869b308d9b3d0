// What a reload (SIGHUP) changes: the subscriptions to stop and to start, one by one, and the
// settings that only a restart applies. Pure: the daemon carries it out.
//
//   ReloadPlan plan = plan_reload(running, next);
//   for (auto& name : plan.stop) ...; for (auto& name : plan.start) ...;
#pragma once

#include <string>
#include <vector>

#include "config/daemon_config.h"

namespace natsfleet::daemon {

struct ReloadPlan {
  // Removed or changed, by name, in the running config's order: stopped before anything starts
  // (a name may move from a [[work]] to a [[broadcast]]).
  std::vector<std::string> stop;
  // Added or changed, by name, in the new config's order ([[work]] first).
  std::vector<std::string> start;
  size_t unchanged = 0;
  // Keys that differ and take effect only at the next start (the connection, the health
  // listener, logging): the running values are kept.
  std::vector<std::string> restart_only;
};

// Every subscription's name: [[work]] first, then [[broadcast]], each in the file's order.
std::vector<std::string> subscription_names(const config::DaemonConfig& c);

ReloadPlan plan_reload(const config::DaemonConfig& running, const config::DaemonConfig& next);

}  // namespace natsfleet::daemon
