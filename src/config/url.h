// Just enough URL reading for the daemon config: the scheme, host and port of a NATS server, an
// http sink's url and the health listen address, and whether a host is the loopback interface.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace natsfleet::config {

struct Url {
  std::string scheme;  // lower case, without "://"
  std::string userinfo;
  std::string host;         // never empty; an IPv6 address without its brackets
  std::optional<int> port;  // 0..65535 when given
  std::string rest;         // path, query and fragment: from the first '/', '?' or '#'
};

// nullopt unless text is "scheme://[userinfo@]host[:port][rest]" with a non-empty host and no
// whitespace or control characters. An IPv6 host must be bracketed.
std::optional<Url> parse_url(std::string_view text);

// localhost, 127.0.0.0/8, ::1 and ::ffff:127.x.y.z. Other names are not resolved: a name that
// happens to point at loopback is not known to be loopback here.
bool is_loopback_host(std::string_view host);

}  // namespace natsfleet::config
