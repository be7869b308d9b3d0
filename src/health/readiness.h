// /readyz in words: whether this replica is ready and, when it is not, every reason why, so an
// operator reading `kubectl describe` or curl output needs no second look.
#pragma once

#include <string>

#include "natsfleet/health.h"

namespace natsfleet::health {

struct ReadinessVerdict {
  bool ready = false;
  // Empty when ready; otherwise the reasons joined with "; ", e.g.
  // "not connected to the broker; work mail-relay is recovering: missed idle heartbeats".
  std::string reason;
};

// Ready only when the fleet says so and nothing contradicts it: live, connected, and every
// subscription bound (stalled is not ready: its consumer has work nobody makes progress on).
ReadinessVerdict readiness(const FleetHealth& health);

}  // namespace natsfleet::health
