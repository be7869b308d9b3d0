#include "config/duration.h"

#include <array>
#include <cstdint>
#include <limits>

namespace natsfleet::config {
namespace {

struct Unit {
  std::string_view suffix;
  std::int64_t ms;
};

// Largest first: parts must follow this order, which also makes "1m1m" and "30s1m" invalid.
constexpr std::array<Unit, 4> kUnits{{{"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}, {"ms", 1}}};

// The unit at the start of `rest`, as an index into kUnits. "ms" is tried before "m" so that
// milliseconds are not read as minutes followed by garbage.
std::optional<size_t> unit_at(std::string_view rest) {
  if (rest.starts_with("ms")) return 3;
  if (rest.starts_with("h")) return 0;
  if (rest.starts_with("m")) return 1;
  if (rest.starts_with("s")) return 2;
  return std::nullopt;
}

// The duration in milliseconds, saturated at INT64_MAX; nullopt when text is not written as a
// duration.
std::optional<std::int64_t> read(std::string_view text) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  if (text.empty()) return std::nullopt;
  std::int64_t total = 0;
  size_t next_unit = 0;
  size_t i = 0;
  while (i < text.size()) {
    std::int64_t number = 0;
    const size_t first_digit = i;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      const int digit = text[i] - '0';
      number = number > (kMax - digit) / 10 ? kMax : number * 10 + digit;
    }
    if (i == first_digit) return std::nullopt;
    const auto unit = unit_at(text.substr(i));
    if (!unit || *unit < next_unit) return std::nullopt;
    next_unit = *unit + 1;
    i += kUnits[*unit].suffix.size();
    total = number > (kMax - total) / kUnits[*unit].ms ? kMax : total + number * kUnits[*unit].ms;
  }
  return total;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  const auto ms = read(text);
  if (!ms || *ms > kMaxDuration.count()) return std::nullopt;
  return std::chrono::milliseconds(*ms);
}

bool looks_like_duration(std::string_view text) { return read(text).has_value(); }

std::string format_duration(std::chrono::milliseconds duration) {
  if (duration.count() == 0) return "0s";
  if (duration.count() < 0) {
    // Appended rather than `"-" + ...`: GCC 12 at -O3 warns falsely (-Wrestrict) on the latter.
    std::string negative = "-";
    negative += format_duration(-duration);
    return negative;
  }
  std::string text;
  std::int64_t left = duration.count();
  for (const Unit& unit : kUnits) {
    if (left < unit.ms) continue;
    text += std::to_string(left / unit.ms);
    text += unit.suffix;
    left %= unit.ms;
  }
  return text;
}

}  // namespace natsfleet::config
