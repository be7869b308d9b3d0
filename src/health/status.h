// /status: the fleet's health as one JSON document, for people and scripts (curl | jq).
// Field names are a contract: {"service","live","ready","connected","reconnects","fatal_reason",
// "subscriptions":[{"name","kind","subject","stream","consumer","state","last_error","counters",
// "consumer_pending","consumer_ack_pending","ack_floor"}]}.
#pragma once

#include <string>

#include "natsfleet/health.h"

namespace natsfleet::health {

// Never throws on odd text: bytes that are not UTF-8 (a broker error quoting a subject, say)
// are replaced with U+FFFD.
std::string render_status(const FleetHealth& health, const std::string& service);

}  // namespace natsfleet::health
