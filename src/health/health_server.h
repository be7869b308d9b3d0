// The daemon's HTTP endpoints: GET /healthz (live), /readyz (ready, with reasons), /metrics
// (Prometheus text) and /status (JSON), served by a net::HttpServer on a thread of its own.
//
//   HealthServer server({.listen = "127.0.0.1:9464"}, [&] { return fleet.health(); }, metrics,
//                       "mailer");
//   if (auto started = server.start(); !started) die(started.error().describe());
//   ...
//   server.stop();
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "health/daemon_metrics.h"
#include "health/metrics.h"
#include "natsfleet/error.h"
#include "natsfleet/health.h"

namespace natsfleet::health {

struct ListenAddress {
  std::string host;   // as written: an IP literal (IPv6 without brackets) or a name to resolve
  uint16_t port = 0;  // 0: the system picks a free port
};

// Reads "host:port", "[v6]:port" or ":port" (all IPv4 interfaces). The error names the text.
[[nodiscard]] Result<ListenAddress> parse_listen_address(std::string_view text);

struct HealthServerOptions {
  std::string listen = "127.0.0.1:9464";
  // From a connection's accept (or its previous answer) to the end of its request's headers. A
  // connection still silent or trickling bytes then is cut and counted (idle or slow), so such
  // clients cannot hold sockets: a probe sends its request at once.
  std::chrono::milliseconds header_timeout = std::chrono::seconds(5);
  // A client that does not take its answer within this long is cut.
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(10);
  // Open connections at most, so a scraper storm cannot exhaust descriptors the daemon needs for
  // the broker and sinks. At the limit a new connection makes room by cutting the one that has
  // waited longest for its request (evicted): a probe is always served, however many idle
  // connections are open. Only when every connection is busy answering is the new one closed.
  std::size_t max_connections = 128;
  // Rendered into /metrics after the fleet's and the daemon's families: the other HTTP servers'
  // counters (websocket gateways). Called on the server's thread.
  std::function<ServerMetrics()> server_metrics;
};

// Called on the server's thread for every request that needs it; must be quick and must not
// call back into the server. An exception becomes a 500 answer.
using HealthSource = std::function<FleetHealth()>;

class HealthServer {
 public:
  // `metrics` must outlive the server; register its subscriptions before start().
  HealthServer(HealthServerOptions options, HealthSource health, const DaemonMetrics& metrics,
               std::string service);
  // Stops when still running.
  ~HealthServer();
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  // Binds and listens, then serves on a thread of its own. Fails (naming the address) when the
  // address cannot be parsed or resolved or is in use; the error code is then the system's, e.g.
  // std::errc::address_in_use. Call once.
  [[nodiscard]] Result<void> start();

  // Closes the listener and every connection without waiting for clients, and joins the thread.
  // Idempotent; safe to call when start() failed or never ran.
  void stop();

  // The bound port once start() succeeded (the chosen one when the address asked for port 0),
  // else 0.
  int port() const;

  // This server's own connection counters (server "health").
  HttpServerStats stats() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace natsfleet::health
