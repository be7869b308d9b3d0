// The embedded broker (public: natsfleet/embedded_broker.h) under the names the daemon, the demo
// and the benchmarks use.
#pragma once

#include "broker/nats_server_process.h"
#include "natsfleet/embedded_broker.h"

namespace natsfleet::broker {

using EmbeddedBrokerOptions = natsfleet::EmbeddedBrokerOptions;
using EmbeddedBroker = natsfleet::EmbeddedBroker;

}  // namespace natsfleet::broker
