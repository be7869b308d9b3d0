// The version a NATS server announces: the first line it sends on every connection is
// `INFO {...,"version":"2.10.27",...}`, in plain text even before TLS and authentication.
// nats.c 3.4 keeps it to itself, so natsfleet reads it on a connection of its own.
//
//   auto v = nats::read_server_version("nats://127.0.0.1:4222", 2s);
//   if (v && v->at_least(2, 10)) ...
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "natsfleet/error.h"

namespace natsfleet::nats {

struct ServerVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  std::string text;  // as announced ("2.10.27", "2.11.0-RC.1")

  bool at_least(int want_major, int want_minor) const {
    return major > want_major || (major == want_major && minor >= want_minor);
  }
};

// The version in an INFO line ("INFO {...}\r\n"); nullopt when the line is not one or names
// no version.
std::optional<ServerVersion> parse_info_version(std::string_view line);

// Host and port of a server URL (nats://, tls://, or bare host:port; user info and an IPv6
// literal's brackets are stripped; the port defaults to 4222). nullopt for another scheme (a
// websocket URL) or a malformed address.
struct HostPort {
  std::string host;
  std::string port;
};
std::optional<HostPort> server_address(std::string_view url);

// Connects to `url`, reads the INFO line and closes, all within `timeout`. Errors: Errc::timeout
// (the server said nothing in time: a server that requires TLS first, say), Errc::protocol (not
// an INFO line), Errc::invalid_argument (not a nats:// or tls:// address), or the socket's own
// error. Nothing is sent, so the server sees a client that left before CONNECT.
[[nodiscard]] Result<ServerVersion> read_server_version(const std::string& url,
                                                        std::chrono::milliseconds timeout);

}  // namespace natsfleet::nats
