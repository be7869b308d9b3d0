// The WebSocket half of the relay: a browser attaches to GET /ws?member=<id> and receives, as text
// frames, every status delivered to that member through the SessionRegistry while it stays
// attached. The same port serves the status page (static files, in-memory pages) and /healthz.
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
  // Bounds one HTTP request, the WebSocket upgrade and the closing handshake.
  std::chrono::milliseconds request_timeout = std::chrono::seconds(10);
  // How long stop() lets open sessions finish their closing handshake before cutting them.
  std::chrono::milliseconds stop_timeout = std::chrono::seconds(2);
  // WebSocket sessions (open or upgrading); further upgrades are answered 503.
  std::size_t max_sessions = 10000;
  // Plain HTTP connections (static files, /healthz); further ones are closed on accept.
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
  std::size_t sessions = 0;          // WebSocket sessions open or upgrading now
  std::size_t http_connections = 0;  // plain HTTP connections open now
  std::uint64_t attached = 0;        // successful upgrades since start
  std::uint64_t refused_member = 0;  // upgrades answered 400: missing or invalid member id
  std::uint64_t refused_full = 0;    // upgrades answered 503: max_sessions reached
  std::uint64_t dropped_slow = 0;    // sessions closed because their outbound queue was full
  std::uint64_t closed_idle = 0;     // sessions closed because nothing arrived in idle_timeout
  std::uint64_t frames_sent = 0;     // statuses written to clients
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
