// natsfleet's WebSocket gateway for a Relay: a browser attaches to GET /ws?member=<key> and
// receives, as text frames, every status the relay delivers for that key on this replica. The
// same port serves a status page (files under web_root) and /healthz.
//
//   natsfleet::Relay relay(fleet, {.name = "sync-status"});
//   natsfleet::RelayGateway gateway(relay, {.port = 8080, .web_root = "web"});
//   if (auto started = gateway.start(); !started) die(started.error().describe());
//   ...
//   gateway.stop();
//
// A service with a WebSocket server of its own does not need this: it attaches its sessions
// with Relay::attach().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "natsfleet/error.h"
#include "natsfleet/export.h"
#include "natsfleet/relay.h"

namespace natsfleet {

struct RelayGatewayOptions {
  std::string host = "127.0.0.1";  // an IP literal or a name to resolve
  uint16_t port = 0;               // 0: the system picks a free port, see port()
  // GET serves files under this directory ("/" is index.html); empty: no files.
  std::string web_root{};
  // Browser pages allowed to attach, by their Origin ("https://app.example.com"; "*": any).
  // Empty: only pages served by this gateway. Others are answered 403.
  std::vector<std::string> allowed_origins{};
  // Who the member is. Neither set: the `member` a request names is believed, so anyone who can
  // reach the port can read any member's statuses.
  // Not empty: a member token signed with this secret is required (`token=` in the query or an
  // `Authorization: Bearer` header): missing or expired 401; malformed, badly signed or for
  // another member 403. The token format is in docs/reference/relay.md.
  std::string token_secret{};
  // Not empty: the member is read from this request header, set by an authenticating proxy in
  // front (which must remove it from what clients send).
  std::string member_header{};
  std::size_t max_sessions = 10000;  // further upgrades are answered 503
  // The gateway pings every session this often; a session from which nothing arrives for
  // idle_timeout is closed.
  std::chrono::milliseconds ping_interval = std::chrono::seconds(20);
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(60);
};

struct RelayGatewayStats {
  std::size_t sessions = 0;        // WebSocket sessions open or upgrading now
  std::uint64_t attached = 0;      // successful upgrades since start
  std::uint64_t refused = 0;       // upgrades refused: bad member, origin or token, or full
  std::uint64_t refused_full = 0;  // of those, answered 503 at max_sessions
  std::uint64_t frames_sent = 0;   // statuses written to clients
  std::uint64_t dropped_slow = 0;  // sessions closed because their client fell behind
  std::uint64_t closed_idle = 0;   // sessions closed because nothing arrived in idle_timeout
};

// Thread safety: start(), stop(), port() and stats() may be called from any thread, at the
// same time as each other; the destructor after every other call has returned.
class NATSFLEET_API RelayGateway {
 public:
  // The relay must outlive the gateway. Every attach makes sure the relay's subscription exists
  // (as Relay::attach does); a failure is logged and retried on the next attach.
  RelayGateway(Relay& relay, RelayGatewayOptions options);
  // Stops when still running.
  ~RelayGateway();
  RelayGateway(const RelayGateway&) = delete;
  RelayGateway& operator=(const RelayGateway&) = delete;

  // Binds, listens and serves on a thread of its own. Fails naming the address when it cannot be
  // resolved or is in use, or naming web_root when that is not a directory. Call once.
  [[nodiscard]] Result<void> start();

  // Closes every session (1001, going away), waits briefly for the closing handshakes and joins
  // the gateway's threads. Idempotent.
  void stop();

  // The bound port once start() succeeded, else 0.
  int port() const;

  RelayGatewayStats stats() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace natsfleet
