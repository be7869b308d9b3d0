// Where to connect or listen, as operators write it: "host:port" endpoints (listen addresses)
// and just enough URL reading for NATS servers and http sinks, plus whether a host is the
// loopback interface.
//
//   auto listen = base::parse_endpoint("[::1]:9464");  // host "::1", port 9464
//   auto url = base::parse_url("nats://u:p@broker:4222");
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "natsfleet/error.h"

namespace natsfleet::base {

struct Endpoint {
  std::string host;  // an IPv6 address without its brackets; empty when the text left it out
  uint16_t port = 0;
};

// Reads "host:port", "[v6]:port" or ":port" (the host left empty: the caller picks a default).
// The port is 0..65535 and required; an IPv6 host needs its brackets. The error
// (Errc::invalid_argument) quotes the text and says what is wrong.
[[nodiscard]] Result<Endpoint> parse_endpoint(std::string_view text);

// "host:port", with brackets around an IPv6 host: what parse_endpoint reads back.
std::string format_endpoint(const Endpoint& endpoint);

struct Url {
  std::string scheme;  // lower case, without "://"
  std::string userinfo;
  std::string host;         // never empty; an IPv6 address without its brackets
  std::optional<int> port;  // 0..65535 when given
  std::string rest;         // path, query and fragment: from the first '/', '?' or '#'
};

// "scheme://[userinfo@]host[:port][rest]" with a non-empty host and no whitespace or control
// characters; an IPv6 host must be bracketed. Otherwise Errc::invalid_argument saying what is
// wrong ("has no host", "has a bad port", ...), without the text (it may carry a password).
[[nodiscard]] Result<Url> parse_url(std::string_view text);

// localhost, 127.0.0.0/8, ::1 and ::ffff:127.x.y.z. Other names are not resolved: a name that
// happens to point at loopback is not known to be loopback here.
bool is_loopback_host(std::string_view host);

}  // namespace natsfleet::base
