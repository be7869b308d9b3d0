// Whether the broker maps an ordered work's subject to partitions as its PartitionPlan says.
// Publishes messages to the work's subject with a Nats-Expected-Stream header no stream has, so
// no stream stores them, and listens for where the mapping sends them.
#pragma once

#include <chrono>
#include <string>

#include "fleet/ordered/partition_plan.h"

namespace natsfleet::nats {
class Connection;
}

namespace natsfleet::fleet {

// "" when the broker maps as planned, else what is wrong, in words.
std::string probe_partition_mapping(nats::Connection& connection, const PartitionPlan& plan,
                                    std::chrono::milliseconds timeout);

}  // namespace natsfleet::fleet
