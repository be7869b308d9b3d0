// A work handler's call, and what it throws as a verdict.
#pragma once

#include <chrono>

#include "fleet/subscription_status.h"
#include "natsfleet/fleet.h"

namespace natsfleet::fleet {

// Calls `handler`. DownstreamUnavailable becomes a retry after its delay (the downstream is down;
// no delivery is used); any other exception a nak after `nak_after` whose reason says what was
// thrown, counted in handler_errors and logged at debug.
Disposition call_work_handler(const WorkHandler& handler, const Message& message,
                              SubscriptionStatus& status, std::chrono::milliseconds nak_after);

}  // namespace natsfleet::fleet
