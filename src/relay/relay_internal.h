// What the relay shares with the rest of src/relay and nothing else: its session registry, which
// the WebSocket gateway fills.
#pragma once

#include "natsfleet/relay.h"
#include "relay/session_registry.h"

namespace natsfleet::relay {

// The registry behind `relay`: lives as long as the relay.
SessionRegistry& registry_of(Relay::Impl& relay);

}  // namespace natsfleet::relay
