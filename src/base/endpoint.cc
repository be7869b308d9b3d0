#include "base/endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>

namespace natsfleet::base {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<uint16_t> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  int port = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + (c - '0');
  }
  if (port > 65535) return std::nullopt;
  return static_cast<uint16_t>(port);
}

// An authority's host and port, as written: "[v6]" loses its brackets; has_port tells ":" with
// nothing after it from no colon at all.
struct Authority {
  std::string_view host;
  std::string_view port;
  bool has_port = false;
};

Result<Authority> split_authority(std::string_view authority) {
  Authority out;
  if (authority.starts_with("[")) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos)
      return Result<Authority>(Errc::invalid_argument, "has an unclosed IPv6 address");
    out.host = authority.substr(1, close - 1);
    const std::string_view tail = authority.substr(close + 1);
    if (!tail.empty()) {
      if (tail.front() != ':')
        return Result<Authority>(Errc::invalid_argument, "has junk after its IPv6 address");
      out.has_port = true;
      out.port = tail.substr(1);
    }
    if (out.host.empty()) return Result<Authority>(Errc::invalid_argument, "has no host");
  } else {
    const size_t colon = authority.find(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      out.has_port = true;
      out.port = authority.substr(colon + 1);
    }
  }
  return out;
}

}  // namespace

Result<Endpoint> parse_endpoint(std::string_view text) {
  auto bad = [&](std::string_view why) {
    std::string message = "\"";
    message.append(text).append("\": ").append(why);
    return Result<Endpoint>(Errc::invalid_argument, std::move(message));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("expected host:port");
  std::string_view host = text.substr(0, colon);
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad("an IPv6 host needs [brackets]");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 host needs [brackets]");
  }
  const auto port = parse_port(text.substr(colon + 1));
  if (!port) return bad("the port must be a number from 0 to 65535");
  return Endpoint{std::string(host), *port};
}

std::string format_endpoint(const Endpoint& endpoint) {
  const bool v6 = endpoint.host.find(':') != std::string::npos;
  return (v6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" + std::to_string(endpoint.port);
}

Result<Url> parse_url(std::string_view text) {
  auto bad = [](const char* why) { return Result<Url>(Errc::invalid_argument, why); };
  for (char c : text)
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)))
      return bad("has whitespace or a control character");
  const size_t scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0) return bad("has no scheme://");
  Url url;
  url.scheme = lower(text.substr(0, scheme_end));
  if (!std::all_of(url.scheme.begin(), url.scheme.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '+' || c == '-' || c == '.';
      }))
    return bad("has a bad scheme");

  std::string_view after = text.substr(scheme_end + 3);
  const size_t authority_end = std::min(after.find_first_of("/?#"), after.size());
  std::string_view authority = after.substr(0, authority_end);
  url.rest = std::string(after.substr(authority_end));
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    url.userinfo = std::string(authority.substr(0, at));
    authority.remove_prefix(at + 1);
  }
  auto parts = split_authority(authority);
  if (!parts) return parts.error();
  if (parts->host.empty() || parts->host.find_first_of("[]@") != std::string_view::npos)
    return bad("has no host");
  url.host = std::string(parts->host);
  if (parts->has_port) {
    const auto port = parse_port(parts->port);
    if (!port) return bad("has a bad port");
    url.port = *port;
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

}  // namespace natsfleet::base
