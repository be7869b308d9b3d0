// A whole text as a decimal number: nothing before or after it, no sign unless T has one.
//
//   if (auto n = base::parse_number<uint64_t>("42")) use(*n);   // 42
//   base::parse_number<int>("4x");                              // nullopt
#pragma once

#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>

namespace natsfleet::base {

template <typename T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace natsfleet::base
