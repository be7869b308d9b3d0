// The embedded broker (public: natsfleet/embedded_broker.h) under the names the daemon, the demo
// and the benchmarks use, and the free-port helper they share.
#pragma once

#include "natsfleet/embedded_broker.h"

namespace natsfleet::broker {

using EmbeddedBrokerOptions = natsfleet::EmbeddedBrokerOptions;
using EmbeddedBroker = natsfleet::EmbeddedBroker;

// Binds 127.0.0.1:0 and returns the port the kernel chose.
int free_loopback_port();

}  // namespace natsfleet::broker
