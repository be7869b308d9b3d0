#include "health/health_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <charconv>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "base/endpoint.h"
#include "health/metrics.h"
#include "health/readiness.h"
#include "health/status.h"
#include "net/listener.h"

namespace natsfleet::health {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

Result<ListenAddress> parse_listen_address(std::string_view text) {
  auto endpoint = base::parse_endpoint(text);
  if (!endpoint)
    return Result<ListenAddress>(Errc::invalid_argument,
                                 "listen address " + endpoint.error().message);
  return ListenAddress{endpoint->host.empty() ? "0.0.0.0" : endpoint->host, endpoint->port};
}

namespace {

constexpr std::size_t kHeaderLimit = 8 * 1024;
constexpr std::size_t kBodyLimit = 8 * 1024;  // the endpoints take no body
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

Response text_response(http::status status, std::string body, unsigned version) {
  Response res{status, version};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  return res;
}

class Session;

}  // namespace

class HealthServer::Impl {
 public:
  Impl(HealthServerOptions options, HealthSource health, const DaemonMetrics& metrics,
       std::string service)
      : options_(std::move(options)),
        health_(std::move(health)),
        metrics_(metrics),
        service_(std::move(service)) {}

  ~Impl() { stop(); }

  Result<void> start();
  void stop();
  int port() const { return port_.load(); }

  Response respond(const Request& req) noexcept;
  std::chrono::milliseconds idle_timeout() const { return options_.idle_timeout; }
  std::chrono::milliseconds header_timeout() const { return options_.header_timeout; }
  HttpServerStats stats() const;

  // Connections waiting for a request, oldest wait first: the ones to cut when a new connection
  // needs room. Server thread only.
  std::uint64_t begin_waiting(const std::shared_ptr<Session>& session);
  void forget_waiting(std::uint64_t ticket) { waiting_.erase(ticket); }

  // Open connections, so max_connections can be enforced; only touched on the server thread.
  std::size_t connections = 0;
  // Read by stats() from any thread.
  std::atomic<std::size_t> open_connections{0};
  std::atomic<std::uint64_t> cut_idle{0};
  std::atomic<std::uint64_t> cut_slow{0};
  std::atomic<std::uint64_t> evicted{0};
  std::atomic<std::uint64_t> refused_busy{0};

 private:
  Response route(const Request& req);
  void accept();

  const HealthServerOptions options_;
  const HealthSource health_;
  const DaemonMetrics& metrics_;
  const std::string service_;

  std::mutex mu_;  // start() and stop() may race from different threads
  bool started_ = false;
  // Destroying the io_context destroys every pending handler and with it the sessions they own:
  // that is how stop() closes connections without waiting for their clients.
  std::unique_ptr<net::io_context> ioc_;
  std::unique_ptr<tcp::acceptor> acceptor_;
  std::unique_ptr<net::steady_timer> retry_timer_;
  std::thread thread_;
  std::atomic<int> port_{0};
  std::map<std::uint64_t, std::weak_ptr<Session>> waiting_;
  std::uint64_t next_wait_ = 1;

  bool evict_oldest_waiting();
};

namespace {

// One connection: read a request, answer it, repeat while the client keeps it alive. Owned by
// the handlers of its pending operation (shared_from_this), so it lives exactly as long as it has
// something to wait for.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HealthServer::Impl& server)
      : stream_(std::move(socket)), server_(server) {
    ++server_.connections;
    ++server_.open_connections;
  }
  ~Session() {
    stop_waiting();
    --server_.connections;
    --server_.open_connections;
  }

  void read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    // One deadline for the whole request (the endpoints take no body): a client trickling bytes
    // gets no more time than an idle one.
    stream_.expires_after(server_.header_timeout());
    wait_ticket_ = server_.begin_waiting(shared_from_this());
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  // Cuts the connection if it is still waiting for a request; its read then ends and releases it.
  void evict() {
    if (wait_ticket_ == 0) return;
    stop_waiting();
    ++server_.evicted;
    beast::error_code ec;
    stream_.socket().close(ec);
  }

 private:
  void stop_waiting() {
    if (wait_ticket_ == 0) return;
    server_.forget_waiting(wait_ticket_);
    wait_ticket_ = 0;
  }

  void on_read(beast::error_code ec) {
    stop_waiting();
    if (ec == beast::error::timeout) {
      ++(parser_->got_some() || buffer_.size() > 0 ? server_.cut_slow : server_.cut_idle);
      return;
    }
    if (ec == http::error::end_of_stream) {
      stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
      return;
    }
    if (ec == beast::error::timeout || ec == net::error::operation_aborted) return;
    if (ec) {
      if (ec.category() != http::make_error_code(http::error::bad_target).category()) return;
      // The client spoke, but not HTTP/1.1 we accept: say so and hang up.
      write(text_response(http::status::bad_request, "bad request: " + ec.message() + "\n", 11),
            true);
      return;
    }
    Request req = parser_->release();
    Response res = server_.respond(req);
    res.keep_alive(req.keep_alive());
    write(std::move(res), !req.keep_alive());
  }

  void write(Response res, bool close) {
    res_ = std::move(res);
    if (close) res_.keep_alive(false);
    res_.prepare_payload();
    stream_.expires_after(server_.idle_timeout());
    http::async_write(stream_, res_,
                      [self = shared_from_this(), close](beast::error_code ec, std::size_t) {
                        if (ec) return;
                        if (close) {
                          self->stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
                          return;
                        }
                        self->read();
                      });
  }

  beast::tcp_stream stream_;
  HealthServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Response res_;
  std::uint64_t wait_ticket_ = 0;
};

}  // namespace

std::uint64_t HealthServer::Impl::begin_waiting(const std::shared_ptr<Session>& session) {
  const std::uint64_t ticket = next_wait_++;
  waiting_.emplace(ticket, session);
  return ticket;
}

bool HealthServer::Impl::evict_oldest_waiting() {
  while (!waiting_.empty()) {
    auto victim = waiting_.begin()->second.lock();
    if (!victim) {
      waiting_.erase(waiting_.begin());
      continue;
    }
    victim->evict();  // takes it off waiting_
    return true;
  }
  return false;
}

HttpServerStats HealthServer::Impl::stats() const {
  HttpServerStats s;
  s.server = "health";
  s.connections = open_connections;
  s.cut_idle = cut_idle;
  s.cut_slow = cut_slow;
  s.evicted = evicted;
  s.refused_busy = refused_busy;
  return s;
}

Result<void> HealthServer::Impl::start() {
  std::lock_guard lock(mu_);
  if (started_) return Result<void>(Errc::invalid_argument, "health server already started");
  started_ = true;

  auto address = parse_listen_address(options_.listen);
  if (!address) return address.error();
  auto fail = [&](const char* what, const beast::error_code& ec) {
    acceptor_.reset();
    ioc_.reset();
    return Result<void>(
        Error{static_cast<std::error_code>(ec),
              fmt::format("health server cannot {} {}: {}", what, options_.listen, ec.message())});
  };

  ioc_ = std::make_unique<net::io_context>(1);
  beast::error_code ec;
  tcp::resolver resolver(*ioc_);
  const auto endpoints =
      resolver.resolve(address->host, std::to_string(address->port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec) return fail("resolve", ec);
  if (endpoints.empty()) return fail("resolve", net::error::host_not_found);
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();

  acceptor_ = std::make_unique<tcp::acceptor>(*ioc_);
  if (auto failed = natsfleet::sockets::listen_at(*acceptor_, endpoint))
    return fail(failed->step, failed->error);
  const tcp::endpoint bound = acceptor_->local_endpoint(ec);
  if (ec) return fail("listen on", ec);
  port_ = bound.port();
  retry_timer_ = std::make_unique<net::steady_timer>(*ioc_);

  accept();
  thread_ = std::thread([this] {
    auto guard = net::make_work_guard(*ioc_);
    for (;;) {
      try {
        ioc_->run();
        return;
      } catch (const std::exception& e) {
        // Handlers are written not to throw; if one does, keep serving rather than go dark.
        spdlog::error("health server: {}", e.what());
      }
    }
  });
  return {};
}

void HealthServer::Impl::stop() {
  std::lock_guard lock(mu_);
  if (!ioc_) return;
  ioc_->stop();
  if (thread_.joinable()) thread_.join();
  retry_timer_.reset();
  acceptor_.reset();
  ioc_.reset();
  port_ = 0;
}

void HealthServer::Impl::accept() {
  acceptor_->async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted) return;
    if (!ec) natsfleet::sockets::close_on_exec(socket.native_handle());
    if (ec) {
      // Typically out of descriptors: back off instead of spinning on the same error.
      spdlog::warn("health server: accept failed: {}", ec.message());
      retry_timer_->expires_after(kAcceptRetry);
      retry_timer_->async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec) accept();
      });
      return;
    }
    if (connections >= options_.max_connections && !evict_oldest_waiting()) {
      ++refused_busy;
      socket.close(ec);
    } else {
      std::make_shared<Session>(std::move(socket), *this)->read();
    }
    accept();
  });
}

Response HealthServer::Impl::respond(const Request& req) noexcept {
  try {
    return route(req);
  } catch (const std::exception& e) {
    spdlog::error("health server: {} {}: {}", std::string(req.method_string()),
                  std::string(req.target()), e.what());
    return text_response(http::status::internal_server_error,
                         std::string("internal error: ") + e.what() + "\n", req.version());
  } catch (...) {
    spdlog::error("health server: {} {}: unknown exception", std::string(req.method_string()),
                  std::string(req.target()));
    return text_response(http::status::internal_server_error, "internal error\n", req.version());
  }
}

Response HealthServer::Impl::route(const Request& req) {
  const unsigned version = req.version();
  if (req.method() != http::verb::get) {
    Response res = text_response(http::status::method_not_allowed, "method not allowed\n", version);
    res.set(http::field::allow, "GET");
    return res;
  }
  std::string_view target(req.target().data(), req.target().size());
  // Scrapers and probes may add a query string; the routes take no parameters.
  target = target.substr(0, target.find('?'));

  if (target == "/healthz") {
    const FleetHealth health = health_();
    if (health.live) return text_response(http::status::ok, "ok\n", version);
    return text_response(http::status::service_unavailable,
                         health.fatal_reason.empty() ? std::string("fatal\n")
                                                     : "fatal: " + health.fatal_reason + "\n",
                         version);
  }
  if (target == "/readyz") {
    const ReadinessVerdict verdict = readiness(health_());
    if (verdict.ready) return text_response(http::status::ok, "ready\n", version);
    return text_response(http::status::service_unavailable, verdict.reason + "\n", version);
  }
  if (target == "/metrics") {
    ServerMetrics servers;
    if (options_.server_metrics) servers = options_.server_metrics();
    servers.http.insert(servers.http.begin(), stats());
    Response res = text_response(http::status::ok,
                                 render_metrics(health_(), metrics_, service_, servers), version);
    res.set(http::field::content_type,
            beast::string_view(kMetricsContentType.data(), kMetricsContentType.size()));
    return res;
  }
  if (target == "/status") {
    Response res = text_response(http::status::ok, render_status(health_(), service_), version);
    res.set(http::field::content_type, "application/json");
    return res;
  }
  return text_response(http::status::not_found, "not found\n", version);
}

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
