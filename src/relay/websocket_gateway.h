// The WebSocket half of the relay: a browser attaches to GET /ws?member=<id> and receives, as text
// frames, every status delivered to that member through the SessionRegistry while it stays
// attached. The same port serves the status page (static files, in-memory pages) and /healthz.
// Connections, their limits and deadlines are the net::HttpServer's until an upgrade takes one.
//
//   SessionRegistry registry;
//   WebSocketGateway gateway({.port = 8080, .web_root = "examples/sync-status/web"}, registry);
//   gateway.on_attach([&](const std::string& member) { relay.ensure_subscribed(member); });
//   if (auto started = gateway.start(); !started) die(started.error().describe());
//   registry.deliver("alice", std::make_shared<const std::string>(status_json));  // any thread
//   gateway.stop();
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "natsfleet/error.h"
#include "relay/session_registry.h"

namespace natsfleet::relay {

struct StaticPage {
  std::string content_type;
  std::string body;
};

struct GatewayOptions {
  std::string host = "127.0.0.1";  // an IP literal or a name to resolve
  uint16_t port = 0;               // 0: the system picks a free port, see port()
  // GET serves files under this directory ("/" is index.html); empty: no files.
  std::filesystem::path web_root;
  // Pages by exact path (e.g. "/"), answered before web_root is looked at.
  std::map<std::string, StaticPage> pages;
  // The server pings every session this often; browsers answer with a pong on their own.
  std::chrono::milliseconds ping_interval = std::chrono::seconds(20);
  // A session from which nothing (pong or any frame) arrives for this long is closed.
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(60);
  // Bounds writing one HTTP answer, the WebSocket upgrade and the closing handshake.
  std::chrono::milliseconds request_timeout = std::chrono::seconds(10);
  // From a connection's accept (or its previous answer) to the end of its request's headers. A
  // connection still silent or trickling bytes then is cut (counted as cut_idle or cut_slow), so
  // idle and slow clients cannot hold connections that upgrades and probes need.
  std::chrono::milliseconds header_timeout = std::chrono::seconds(5);
  // Browser pages allowed to attach, by their Origin ("https://app.example.com", compared without
  // case; "*": any origin). Empty: only pages served by this gateway (the Origin's host:port is
  // the request's Host). A request without Origin is not a browser's and is not judged by it.
  // Others are answered 403 (refused_origin).
  std::vector<std::string> allowed_origins;
  // Who the member is. Neither set: the `member` a request names is believed, so anyone who can
  // reach the port can read any member's statuses.
  // Not empty: a member token signed with this secret (see member_token.h) is required, in the
  // query (`token=`) or an `Authorization: Bearer` header; missing or expired: 401, malformed,
  // badly signed or for another member than `member=` names: 403.
  std::string token_secret;
  // Not empty: the member is read from this request header, set by an authenticating proxy in
  // front (which must remove it from what clients send). Used whenever present; without it a
  // token is needed (401 when no secret is set either).
  std::string member_header;
  // How long stop() lets open sessions finish their closing handshake before cutting them.
  std::chrono::milliseconds stop_timeout = std::chrono::seconds(2);
  // WebSocket sessions (open or upgrading); further upgrades are answered 503.
  std::size_t max_sessions = 10000;
  // Plain HTTP connections (static files, /healthz, upgrades being read). At the limit a new
  // connection makes room by cutting the one that has waited longest for its request (evicted);
  // only when every one is busy answering is the new one closed.
  std::size_t max_http_connections = 1024;
  // A session whose client does not take its statuses fast enough is dropped (closed) as soon as
  // its outbound queue would exceed either bound. A lone status larger than the byte bound is
  // still queued.
  std::size_t max_queued_messages = 256;
  std::size_t max_queued_bytes = std::size_t{1} << 20;
  // Client frames are read only to see that the client is alive; larger ones close the session.
  std::size_t max_inbound_message_bytes = 4096;
  int io_threads = 1;
};

struct GatewayStats {
  std::size_t sessions = 0;                   // WebSocket sessions open or upgrading now
  std::size_t http_connections = 0;           // plain HTTP connections open now
  std::uint64_t attached = 0;                 // successful upgrades since start
  std::uint64_t refused_member = 0;           // upgrades answered 400: missing or invalid member id
  std::uint64_t refused_full = 0;             // upgrades answered 503: max_sessions reached
  std::uint64_t refused_origin = 0;           // upgrades answered 403: Origin not allowed
  std::uint64_t refused_unauthenticated = 0;  // 401: no token (or proxy header)
  std::uint64_t refused_expired = 0;          // 401: the token's expiry has passed
  std::uint64_t refused_bad_token = 0;        // 403: malformed or badly signed token
  std::uint64_t refused_member_mismatch = 0;  // 403: member= names another member than the token
  std::uint64_t cut_idle = 0;      // HTTP connections cut having sent nothing within header_timeout
  std::uint64_t cut_slow = 0;      // HTTP connections cut with their headers incomplete by then
  std::uint64_t evicted = 0;       // idle HTTP connections cut to make room for a new one
  std::uint64_t refused_busy = 0;  // connections closed on accept: every slot busy answering
  std::uint64_t dropped_slow = 0;  // sessions closed because their outbound queue was full
  std::uint64_t closed_idle = 0;   // sessions closed because nothing arrived in idle_timeout
  std::uint64_t frames_sent = 0;   // statuses written to clients
};

// Called once per successful attach with the member's id, in attach order, on a thread of the
// gateway's own (never an io thread), so it may block briefly, e.g. to (re)ensure a broker
// subscription. Attaches that happen while it runs wait in a queue. An exception is logged.
using AttachHook = std::function<void(const std::string& member)>;

class WebSocketGateway {
 public:
  // `registry` must outlive the gateway; sessions are added to it on attach and removed when they
  // close. Statuses may be delivered through it from any thread, also while the gateway stops.
  WebSocketGateway(GatewayOptions options, SessionRegistry& registry);
  // Stops when still running.
  ~WebSocketGateway();
  WebSocketGateway(const WebSocketGateway&) = delete;
  WebSocketGateway& operator=(const WebSocketGateway&) = delete;

  // Replaces the attach hook; may be called at any time.
  void on_attach(AttachHook hook);

  // Binds, listens and serves on io_threads threads of its own. Fails naming the address when it
  // cannot be resolved or is in use (the error code is then the system's, e.g.
  // std::errc::address_in_use), or naming web_root when that is set but is not a directory.
  // Call once.
  [[nodiscard]] Result<void> start();

  // Stops accepting, sends every session a close frame (1001, going away) and waits up to
  // stop_timeout for the closing handshakes, then cuts whatever is left, removes every session
  // from the registry and joins the threads. Idempotent; safe when start() failed or never ran.
  void stop();

  // The bound port once start() succeeded, else 0.
  int port() const;

  GatewayStats stats() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace natsfleet::relay
