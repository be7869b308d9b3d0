// One replica of a service that relays statuses, for tests: its Fleet and its Relay ("sync-status",
// heartbeat 250 ms) over the broker at `url`, with the test clocks of fast_fleet.h.
#pragma once

#include <string>
#include <utility>

#include "natsfleet/fleet.h"
#include "natsfleet/relay.h"
#include "support/fast_fleet.h"

namespace natsfleet::testing {

struct RelayReplica {
  RelayReplica(const std::string& url, const std::string& name, RelayOptions options = {})
      : fleet(fast_options({url}, name)), relay(fleet, fast_relay(std::move(options))) {}

  static RelayOptions fast_relay(RelayOptions o) {
    o.name = "sync-status";
    o.heartbeat = 250ms;
    return o;
  }

  Fleet fleet;
  Relay relay;
};

}  // namespace natsfleet::testing
