// Instants as natsfleet writes them (sink records, dead-letter headers, JSON log lines):
// RFC 3339, UTC, with milliseconds, "2026-11-29T21:49:45.123Z"; and as the broker writes them
// (STREAM.MSG.GET's "time"): RFC 3339 with up to nanoseconds and a zone, read back exactly.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace natsfleet::base {

// For nanoseconds since the Unix epoch (before 1970 too).
std::string format_utc_millis(int64_t unix_ns);

std::string format_utc_millis(std::chrono::system_clock::time_point time);

// "2026-12-03T18:11:23.086123456Z" (or "+01:00" for the zone) -> nanoseconds since the Unix
// epoch; none when the text is not RFC 3339 (fraction: 0 to 9 digits).
std::optional<int64_t> parse_rfc3339_nanos(std::string_view text);

// This host's wall clock, in nanoseconds since the Unix epoch.
int64_t unix_now_ns();

// By this host's wall clock, `unix_ns` (a broker's timestamp, say) is at least `age` ago.
bool older_than(int64_t unix_ns, std::chrono::nanoseconds age);

}  // namespace natsfleet::base
