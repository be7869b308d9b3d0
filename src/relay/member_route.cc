#include "relay/member_route.h"

#include <optional>

namespace natsfleet::relay {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool member_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == ':' || c == '@' || c == '-';
}

}  // namespace

bool valid_member_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxMemberIdLength) return false;
  for (const char c : id) {
    if (!member_char(c)) return false;
  }
  return true;
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int hi = hex_value(text[i + 1]);
    const int lo = hex_value(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

Result<std::optional<std::string>> query_parameter(std::string_view query, std::string_view name) {
  std::optional<std::string> found;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = pair.find('=');
    const auto key = percent_decode(pair.substr(0, eq));
    if (!key || *key != name) continue;
    if (found) {
      return Result<std::optional<std::string>>(Errc::invalid_argument,
                                                std::string(name) + " is given twice");
    }
    auto value =
        percent_decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!value) {
      return Result<std::optional<std::string>>(Errc::invalid_argument,
                                                std::string(name) + " is badly escaped");
    }
    found = std::move(*value);
  }
  return found;
}

Result<std::string> member_from_query(std::string_view query) {
  auto parameter = query_parameter(query, "member");
  if (!parameter) return parameter.error();
  std::optional<std::string> member = std::move(parameter.value());
  if (!member) return Result<std::string>(Errc::invalid_argument, "member is missing");
  if (!valid_member_id(*member)) {
    return Result<std::string>(Errc::invalid_argument,
                               "member must be 1 to 64 characters of A-Z a-z 0-9 _ . : @ -");
  }
  return std::move(*member);
}

}  // namespace natsfleet::relay
