#include "health/health_server.h"

#include <fmt/format.h>

#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "base/endpoint.h"
#include "health/metrics.h"
#include "health/readiness.h"
#include "health/status.h"
#include "net/http_server.h"

namespace natsfleet::health {

namespace beast = boost::beast;
namespace http = beast::http;

Result<ListenAddress> parse_listen_address(std::string_view text) {
  auto endpoint = base::parse_endpoint(text);
  if (!endpoint)
    return Result<ListenAddress>(Errc::invalid_argument,
                                 "listen address " + endpoint.error().message);
  return ListenAddress{endpoint->host.empty() ? "0.0.0.0" : endpoint->host, endpoint->port};
}

namespace {

using net::Answer;
using net::Request;
using net::Response;
using net::text_response;

}  // namespace

class HealthServer::Impl {
 public:
  Impl(HealthServerOptions options, HealthSource health, const DaemonMetrics& metrics,
       std::string service)
      : options_(std::move(options)),
        health_(std::move(health)),
        metrics_(metrics),
        service_(std::move(service)) {
    auto address = parse_listen_address(options_.listen);
    if (!address) {
      listen_error_ = address.error();  // start() reports it
      return;
    }
    server_ = std::make_unique<net::HttpServer>(net::HttpServerOptions{
        .name = "health server",
        .host = address->host,
        .port = address->port,
        .header_timeout = options_.header_timeout,
        .write_timeout = options_.idle_timeout,
        .max_connections = options_.max_connections,
        // Probes do not wait for goodbyes: stop() cuts every connection at once.
        .stop_timeout = std::chrono::milliseconds(0),
        .io_threads = 1,
    });
    add_routes(*server_);
  }

  Result<void> start() { return server_ ? server_->start() : Result<void>(*listen_error_); }
  void stop() {
    if (server_) server_->stop();
  }
  int port() const { return server_ ? server_->port() : 0; }

  HttpServerStats stats() const {
    HttpServerStats s;
    s.server = "health";
    if (!server_) return s;
    const net::HttpServerStats served = server_->stats();
    s.connections = served.connections;
    s.cut_idle = served.cut_idle;
    s.cut_slow = served.cut_slow;
    s.evicted = served.evicted;
    s.refused_busy = served.refused_busy;
    return s;
  }

 private:
  // The routes take no parameters; a scraper's or probe's query string is ignored.
  void add_routes(net::HttpServer& server) {
    server.route(http::verb::get, "/healthz", [this](const Request& req) -> Answer {
      const FleetHealth health = health_();
      if (health.live) return text_response(http::status::ok, "ok\n", req.version());
      return text_response(http::status::service_unavailable,
                           health.fatal_reason.empty() ? std::string("fatal\n")
                                                       : "fatal: " + health.fatal_reason + "\n",
                           req.version());
    });
    server.route(http::verb::get, "/readyz", [this](const Request& req) -> Answer {
      const ReadinessVerdict verdict = readiness(health_());
      if (verdict.ready) return text_response(http::status::ok, "ready\n", req.version());
      return text_response(http::status::service_unavailable, verdict.reason + "\n", req.version());
    });
    server.route(http::verb::get, "/metrics", [this](const Request& req) -> Answer {
      ServerMetrics servers;
      if (options_.server_metrics) servers = options_.server_metrics();
      servers.http.insert(servers.http.begin(), stats());
      Response res = text_response(
          http::status::ok, render_metrics(health_(), metrics_, service_, servers), req.version());
      res.set(http::field::content_type,
              beast::string_view(kMetricsContentType.data(), kMetricsContentType.size()));
      return res;
    });
    server.route(http::verb::get, "/status", [this](const Request& req) -> Answer {
      Response res =
          text_response(http::status::ok, render_status(health_(), service_), req.version());
      res.set(http::field::content_type, "application/json");
      return res;
    });
  }

  const HealthServerOptions options_;
  const HealthSource health_;
  const DaemonMetrics& metrics_;
  const std::string service_;

  std::optional<Error> listen_error_;
  std::unique_ptr<net::HttpServer> server_;  // null when the listen address is unusable
};

HealthServer::HealthServer(HealthServerOptions options, HealthSource health,
                           const DaemonMetrics& metrics, std::string service)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(health), metrics,
                                   std::move(service))) {}

HealthServer::~HealthServer() = default;

Result<void> HealthServer::start() { return impl_->start(); }

void HealthServer::stop() { impl_->stop(); }

int HealthServer::port() const { return impl_->port(); }

HttpServerStats HealthServer::stats() const { return impl_->stats(); }

}  // namespace natsfleet::health
