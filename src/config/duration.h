// Durations as the daemon config writes them: a string of number-unit parts, largest unit first,
// each unit at most once: "250ms", "30s", "2m", "1h", "1m30s". Units: h, m, s, ms.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace natsfleet::config {

// nullopt for anything else: no unit ("30"), spaces ("30 s"), a sign ("-1s"), a fraction
// ("1.5s"), an unknown unit ("1x"), units out of order ("30s1m") or an overflow. "0s" is valid;
// whether zero is acceptable is the caller's call.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// The shortest form parse_duration reads back: 90000ms -> "1m30s", 0 -> "0s".
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace natsfleet::config
