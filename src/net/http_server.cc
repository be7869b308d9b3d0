#include "net/http_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "base/log_event.h"
#include "net/http_connection.h"
#include "net/http_core.h"
#include "net/listener.h"

namespace natsfleet::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

Response text_response(http::status status, std::string body, unsigned version) {
  Response res{status, version};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  return res;
}

std::string_view request_path(const Request& req) {
  const std::string_view target(req.target().data(), req.target().size());
  return target.substr(0, target.find('?'));
}

std::string_view request_query(const Request& req) {
  const std::string_view target(req.target().data(), req.target().size());
  const auto question = target.find('?');
  return question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
}

namespace {

constexpr auto kAcceptRetry = std::chrono::milliseconds(100);
constexpr auto kStopPoll = std::chrono::milliseconds(5);
// Bounds running the handlers of cut connections at the end of stop(): their operations fail at
// once, so this is only reached when something is wrong.
constexpr auto kDrainLimit = std::chrono::seconds(2);

std::string display_address(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

}  // namespace

class HttpServer::Impl {
 public:
  explicit Impl(HttpServerOptions options)
      : core_(std::make_shared<HttpCore>(std::move(options))) {}
  ~Impl() {
    try {
      stop();
    } catch (const std::exception& e) {
      base::log_event(*spdlog::default_logger(), spdlog::level::err,
                      {{"event", "http-error"}, {"server", core_->options.name}},
                      "{}: stopping: {}", core_->options.name, e.what());
    }
  }

  HttpCore& core() { return *core_; }
  Result<void> start();
  void stop();
  int port() const { return port_.load(); }
  HttpServerStats stats() const;
  std::shared_ptr<asio::io_context> io_context() const {
    return {core_, &core_->ioc};  // shares the HttpCore's ownership
  }

 private:
  void accept();
  void retry_accept(beast::error_code ec);
  // Takes one accepted connection; a failure loses that connection, never the listener.
  void serve(tcp::socket socket) noexcept;

  // Also held by every connection and io thread.
  const std::shared_ptr<HttpCore> core_;

  std::mutex mu_;  // start() and stop() may race
  bool started_ = false;
  bool running_ = false;
  std::unique_ptr<tcp::acceptor> acceptor_;
  std::unique_ptr<asio::steady_timer> retry_timer_;
  std::vector<std::thread> threads_;
  std::atomic<int> port_{0};
};

Result<void> HttpServer::Impl::start() {
  const HttpServerOptions& options = core_->options;
  std::lock_guard lock(mu_);
  if (started_) return Result<void>(Errc::invalid_argument, options.name + " already started");
  started_ = true;
  if (options.io_threads < 1) {
    return Result<void>(Errc::invalid_argument, options.name + ": io_threads must be positive");
  }

  const std::string address = display_address(options.host, options.port);
  auto fail = [&](const char* what, const beast::error_code& ec) {
    acceptor_.reset();
    return Result<void>(
        Error{static_cast<std::error_code>(ec),
              fmt::format("{} cannot {} {}: {}", options.name, what, address, ec.message())});
  };
  beast::error_code ec;
  tcp::resolver resolver(core_->ioc);
  const auto endpoints =
      resolver.resolve(options.host, std::to_string(options.port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec) return fail("resolve", ec);
  if (endpoints.empty()) return fail("resolve", asio::error::host_not_found);

  acceptor_ = std::make_unique<tcp::acceptor>(asio::make_strand(core_->ioc));
  if (auto failed = listen_at(*acceptor_, endpoints.begin()->endpoint()))
    return fail(failed->step, failed->error);
  const tcp::endpoint bound = acceptor_->local_endpoint(ec);
  if (ec) return fail("listen on", ec);
  retry_timer_ = std::make_unique<asio::steady_timer>(acceptor_->get_executor());

  running_ = true;
  port_ = bound.port();
  accept();
  // No work guard: once stop() has closed the acceptor and every connection, run() returns.
  for (int i = 0; i < options.io_threads; ++i) {
    threads_.emplace_back([core = core_] {
      for (;;) {
        try {
          core->ioc.run();
          return;
        } catch (const std::exception& e) {
          // Handlers are written not to throw; if one does, keep serving rather than go dark.
          base::log_event(*spdlog::default_logger(), spdlog::level::err,
                          {{"event", "http-error"}, {"server", core->options.name}}, "{}: {}",
                          core->options.name, e.what());
        } catch (...) {
          base::log_event(*spdlog::default_logger(), spdlog::level::err,
                          {{"event", "http-error"}, {"server", core->options.name}},
                          "{}: unknown exception", core->options.name);
        }
      }
    });
  }
  return {};
}

void HttpServer::Impl::accept() {
  // Each connection gets a strand of its own, so io_threads can serve them in parallel.
  acceptor_->async_accept(asio::make_strand(core_->ioc),
                          [this](beast::error_code ec, tcp::socket socket) {
                            if (ec == asio::error::operation_aborted || core_->stopping) return;
                            if (ec) {
                              retry_accept(ec);
                              return;
                            }
                            serve(std::move(socket));
                            accept();
                          });
}

void HttpServer::Impl::retry_accept(beast::error_code ec) {
  // Typically out of descriptors: back off instead of spinning on the same error.
  base::log_event(*spdlog::default_logger(), spdlog::level::warn,
                  {{"event", "http-error"}, {"server", core_->options.name}},
                  "{}: accept failed: {}", core_->options.name, ec.message());
  retry_timer_->expires_after(kAcceptRetry);
  retry_timer_->async_wait([this](beast::error_code wait_ec) {
    if (!wait_ec && !core_->stopping) accept();
  });
}

void HttpServer::Impl::serve(tcp::socket socket) noexcept {
  try {
    close_on_exec(socket.native_handle());
    auto connection = std::make_shared<HttpConnection>(std::move(socket), core_);
    std::shared_ptr<HttpConnection> victim;
    if (!core_->admit(victim)) {
      // Every connection is busy answering: this one has to try again later.
      ++core_->refused_busy;
      return;  // closed with `connection`
    }
    if (victim) victim->cut_for_room();
    connection->start();
  } catch (const std::exception& e) {
    base::log_event(*spdlog::default_logger(), spdlog::level::err,
                    {{"event", "http-error"}, {"server", core_->options.name}}, "{}: accept: {}",
                    core_->options.name, e.what());
  } catch (...) {
    base::log_event(*spdlog::default_logger(), spdlog::level::err,
                    {{"event", "http-error"}, {"server", core_->options.name}},
                    "{}: accept: unknown exception", core_->options.name);
  }
}

void HttpServer::Impl::stop() {
  std::lock_guard lock(mu_);
  if (!running_) return;
  running_ = false;
  core_->stopping = true;

  // Clean phase, io threads still running: no new connections, every connection asked to close.
  asio::post(acceptor_->get_executor(), [this] {
    beast::error_code ec;
    acceptor_->close(ec);
    retry_timer_->cancel();
  });
  for (const auto& connection : core_->live_connections()) connection->close_gracefully();
  const auto deadline = Clock::now() + core_->options.stop_timeout;
  while (!core_->live_connections().empty() && Clock::now() < deadline) {
    std::this_thread::sleep_for(kStopPoll);
  }

  // Cut phase: whatever did not close in time is closed with no io thread running.
  core_->ioc.stop();
  for (auto& thread : threads_) thread.join();
  threads_.clear();
  for (const auto& connection : core_->live_connections()) connection->abort();
  {
    beast::error_code ec;
    acceptor_->close(ec);
    retry_timer_->cancel();
  }
  // The cut operations' handlers hold their connections: run them so nothing stays queued in an
  // io_context that the connections themselves keep alive.
  core_->ioc.restart();
  core_->ioc.run_for(kDrainLimit);
  if (!core_->ioc.stopped()) {
    base::log_event(*spdlog::default_logger(), spdlog::level::warn,
                    {{"event", "http-error"}, {"server", core_->options.name}},
                    "{}: some connections did not close in time", core_->options.name);
  }
  retry_timer_.reset();
  acceptor_.reset();
  port_ = 0;
}

HttpServerStats HttpServer::Impl::stats() const {
  HttpServerStats s;
  s.connections = core_->open_connections();
  s.cut_idle = core_->cut_idle;
  s.cut_slow = core_->cut_slow;
  s.evicted = core_->evicted;
  s.refused_busy = core_->refused_busy;
  return s;
}

HttpServer::HttpServer(HttpServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() = default;

void HttpServer::route(http::verb method, std::string path, Handler handler) {
  impl_->core().add_route(method, std::move(path), std::move(handler));
}

void HttpServer::route_any_method(std::string path, Handler handler) {
  impl_->core().add_route(std::nullopt, std::move(path), std::move(handler));
}

void HttpServer::fallback(http::verb method, Handler handler) {
  impl_->core().add_fallback(method, std::move(handler));
}

Result<void> HttpServer::start() { return impl_->start(); }

void HttpServer::stop() { impl_->stop(); }

int HttpServer::port() const { return impl_->port(); }

HttpServerStats HttpServer::stats() const { return impl_->stats(); }

std::shared_ptr<asio::io_context> HttpServer::io_context() const { return impl_->io_context(); }

}  // namespace natsfleet::net
