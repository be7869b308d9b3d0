// Whether the broker maps an ordered work's subject to partitions as its PartitionPlan says.
// Publishes messages to the work's subject with a Nats-Expected-Stream header no stream has, so
// no stream stores them, and listens for where the mapping sends them.
#pragma once

#include <chrono>
#include <string>

#include "fleet/ordered/partition_plan.h"
#include "natsfleet/error.h"

namespace natsfleet::nats {
class Connection;
}

namespace natsfleet::fleet {

// Errors, in words: timeout (no probe reached a subscriber: publishing or subscribing is not
// allowed, or the link dropped), invalid_argument (no mapping, or another one), or the
// connection's own (cannot subscribe or publish).
Result<void> probe_partition_mapping(nats::Connection& connection, const PartitionPlan& plan,
                                     std::chrono::milliseconds timeout);

}  // namespace natsfleet::fleet
