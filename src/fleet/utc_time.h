// Instants as natsfleet writes them (sink records, dead-letter headers): RFC 3339, UTC, with
// milliseconds, "2026-11-29T21:49:45.123Z".
#pragma once

#include <cstdint>
#include <string>

namespace natsfleet::fleet {

// For nanoseconds since the Unix epoch (before 1970 too).
std::string format_utc_millis(int64_t unix_ns);

}  // namespace natsfleet::fleet
