// Instants as natsfleet writes them (sink records, dead-letter headers, JSON log lines):
// RFC 3339, UTC, with milliseconds, "2026-11-29T21:49:45.123Z".
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace natsfleet::base {

// For nanoseconds since the Unix epoch (before 1970 too).
std::string format_utc_millis(int64_t unix_ns);

std::string format_utc_millis(std::chrono::system_clock::time_point time);

}  // namespace natsfleet::base
