#include "config/url.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>

namespace natsfleet::config {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<int> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  int port = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + (c - '0');
  }
  if (port > 65535) return std::nullopt;
  return port;
}

}  // namespace

std::optional<Url> parse_url(std::string_view text) {
  for (char c : text)
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)))
      return std::nullopt;
  const size_t scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0) return std::nullopt;
  Url url;
  url.scheme = lower(text.substr(0, scheme_end));
  if (!std::all_of(url.scheme.begin(), url.scheme.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '+' || c == '-' || c == '.';
      }))
    return std::nullopt;

  std::string_view after = text.substr(scheme_end + 3);
  const size_t authority_end = std::min(after.find_first_of("/?#"), after.size());
  std::string_view authority = after.substr(0, authority_end);
  url.rest = std::string(after.substr(authority_end));
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    url.userinfo = std::string(authority.substr(0, at));
    authority.remove_prefix(at + 1);
  }

  std::string_view host;
  std::string_view port_part;
  bool has_port = false;
  if (authority.starts_with("[")) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = authority.substr(1, close - 1);
    std::string_view tail = authority.substr(close + 1);
    if (!tail.empty()) {
      if (tail.front() != ':') return std::nullopt;
      has_port = true;
      port_part = tail.substr(1);
    }
  } else {
    const size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      has_port = true;
      port_part = authority.substr(colon + 1);
    }
  }
  if (host.empty() || host.find_first_of("[]@") != std::string_view::npos) return std::nullopt;
  url.host = std::string(host);
  if (has_port) {
    url.port = parse_port(port_part);
    if (!url.port) return std::nullopt;
  }
  return url;
}

bool is_loopback_host(std::string_view host) {
  const std::string name = lower(host);
  if (name == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, name.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, name.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

}  // namespace natsfleet::config
