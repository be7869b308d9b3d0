// Durations as the daemon config writes them: a string of number-unit parts, largest unit first,
// each unit at most once: "250ms", "30s", "2m", "1h", "1m30s". Units: h, m, s, ms.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace natsfleet::config {

// The longest duration any config key takes is far below this; above it a duration would no
// longer fit the broker's nanosecond fields (int64 nanoseconds end after 292 years).
inline constexpr std::chrono::milliseconds kMaxDuration = std::chrono::hours(24 * 365 * 100);

// nullopt for anything else: no unit ("30"), spaces ("30 s"), a sign ("-1s"), a fraction
// ("1.5s"), an unknown unit ("1x"), units out of order ("30s1m") or more than kMaxDuration.
// "0s" is valid; whether zero is acceptable is the caller's call.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// True when text is written like a duration, however long: "9999999999h" is, "30" is not. Tells
// "too long" from "not a duration" in an error.
bool looks_like_duration(std::string_view text);

// The shortest form parse_duration reads back: 90000ms -> "1m30s", 0 -> "0s".
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace natsfleet::config
