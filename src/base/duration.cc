#include "base/duration.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

namespace natsfleet::base {
namespace {

constexpr std::int64_t kMaxNs = std::numeric_limits<std::int64_t>::max();

struct Unit {
  std::string_view suffix;
  std::int64_t ns;
};

constexpr std::array<Unit, 6> kUnits{{{"h", 3'600'000'000'000},
                                      {"m", 60'000'000'000},
                                      {"s", 1'000'000'000},
                                      {"ms", 1'000'000},
                                      {"us", 1'000},
                                      {"ns", 1}}};

constexpr std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  return a > kMaxNs - b ? kMaxNs : a + b;
}

// The duration in nanoseconds, saturated at INT64_MAX; nullopt when text is not written as a
// duration.
std::optional<std::int64_t> read(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    std::int64_t whole = 0;
    size_t digits = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
      const int digit = text[i] - '0';
      whole = whole > (kMaxNs - digit) / 10 ? kMaxNs : whole * 10 + digit;
    }
    double fraction = 0;
    if (i < text.size() && text[i] == '.') {
      double scale = 0.1;
      for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
        fraction += (text[i] - '0') * scale;
        scale /= 10;
      }
    }
    if (digits == 0) return std::nullopt;
    const size_t unit_start = i;
    while (i < text.size() && text[i] >= 'a' && text[i] <= 'z') ++i;
    const std::string_view suffix = text.substr(unit_start, i - unit_start);
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits)
      if (u.suffix == suffix) unit = &u;
    if (unit == nullptr) return std::nullopt;
    const std::int64_t part =
        whole > kMaxNs / unit->ns
            ? kMaxNs
            : saturating_add(whole * unit->ns,
                             std::llround(fraction * static_cast<double>(unit->ns)));
    total = saturating_add(total, part);
  }
  return total;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  const auto ns = read(text);
  if (!ns) return std::nullopt;
  // Half a millisecond and up rounds up.
  const std::int64_t ms = *ns / 1'000'000 + (*ns % 1'000'000 >= 500'000 ? 1 : 0);
  if (ms > kMaxDuration.count()) return std::nullopt;
  return std::chrono::milliseconds(ms);
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
    const std::int64_t unit_ms = unit.ns / 1'000'000;
    if (unit_ms == 0 || left < unit_ms) continue;
    text += std::to_string(left / unit_ms);
    text += unit.suffix;
    left %= unit_ms;
  }
  return text;
}

}  // namespace natsfleet::base
