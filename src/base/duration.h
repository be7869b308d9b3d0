// Durations as operators write them, in the daemon config and in a worker's answers: one or more
// number-unit parts, "250ms", "30s", "2m", "1h", "1m30s", "1.5s". Units: h, m, s, ms, us, ns.
//
//   auto wait = base::parse_duration("1m30s");  // 90000ms
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace natsfleet::base {

// The longest duration any caller takes is far below this; above it a duration would no longer
// fit the broker's nanosecond fields (int64 nanoseconds end after 292 years).
inline constexpr std::chrono::milliseconds kMaxDuration = std::chrono::hours(24 * 365 * 100);

// A part is a number (digits with at most one '.': "5", "1.5", ".5", "5.") directly followed by
// its unit; parts may come in any order and repeat ("1m30s", "30s1m" and "1m1m" are all read).
// The sum is rounded to the nearest millisecond. nullopt for anything else: an empty text, no
// unit ("30"), spaces ("30 s"), a sign ("-1s"), an unknown unit ("1x", "5d"), a malformed number
// ("1.2.3s"), or more than kMaxDuration. "0s" is valid; whether zero (or a value as long as
// kMaxDuration) is acceptable is the caller's call.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// True when text is written like a duration, however long: "9999999999h" is, "30" is not. Tells
// "too long" from "not a duration" in an error.
bool looks_like_duration(std::string_view text);

// The shortest form parse_duration reads back, largest unit first: 90000ms -> "1m30s", 0 -> "0s".
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace natsfleet::base
