// A broadcast from a JetStream stream (BroadcastSource::jetstream): every replica handles every
// message, each through its own named ephemeral consumer (ConsumerSubscription with
// Scope::per_replica), which starts at new messages and, when lost, is recreated after the last
// message this replica saw. The stream is created first when the spec asks for it.
#pragma once

#include <memory>

#include "fleet/supervised.h"
#include "natsfleet/spec.h"

namespace natsfleet::fleet {

std::unique_ptr<Supervised> jetstream_broadcast(const BroadcastSpec& spec, BroadcastHandler handler,
                                                FleetContext& context);

}  // namespace natsfleet::fleet
