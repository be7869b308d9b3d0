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
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/log_event.h"
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

constexpr std::size_t kHeaderLimit = std::size_t{8} * 1024;
constexpr std::size_t kBodyLimit = std::size_t{8} * 1024;  // no route takes a body
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);
constexpr auto kStopPoll = std::chrono::milliseconds(5);
// Bounds running the handlers of cut connections at the end of stop(): their operations fail at
// once, so this is only reached when something is wrong.
constexpr auto kDrainLimit = std::chrono::seconds(2);
constexpr std::size_t kMinTrackedPrune = 64;

std::string display_address(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

// No exception may leave an io handler: one that does ends its connection (`finish`), never the
// server.
template <typename F, typename Finish>
void run_guarded(const std::string& server, F&& f, Finish&& finish) noexcept {
  try {
    f();
    return;
  } catch (const std::exception& e) {
    base::log_event(*spdlog::default_logger(), spdlog::level::err,
                    {{"event", "http-error"}, {"server", server}}, "{}: connection: {}", server,
                    e.what());
  } catch (...) {
    base::log_event(*spdlog::default_logger(), spdlog::level::err,
                    {{"event", "http-error"}, {"server", server}},
                    "{}: connection: unknown exception", server);
  }
  try {
    finish();
  } catch (const std::exception& e) {
    base::log_event(*spdlog::default_logger(), spdlog::level::err,
                    {{"event", "http-error"}, {"server", server}},
                    "{}: connection: cannot close: {}", server, e.what());
  } catch (...) {
    base::log_event(*spdlog::default_logger(), spdlog::level::err,
                    {{"event", "http-error"}, {"server", server}}, "{}: connection: cannot close",
                    server);
  }
}

struct PathRoutes {
  std::map<http::verb, Handler> by_method;
  Handler any_method;
};

class HttpConnection;

// What connections share with the server. Every connection holds it, so one that outlives stop()
// (a taken-over connection another thread still holds) still has its io_context.
class Core {
 public:
  explicit Core(HttpServerOptions o)
      : options(std::move(o)), ioc(std::max(1, options.io_threads)) {}

  const HttpServerOptions options;
  asio::io_context ioc;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> cut_idle{0};
  std::atomic<std::uint64_t> cut_slow{0};
  std::atomic<std::uint64_t> evicted{0};
  std::atomic<std::uint64_t> refused_busy{0};

  // Routes are only written before start(), so io threads read them without a lock.
  void add_route(std::optional<http::verb> method, std::string path, Handler handler) {
    PathRoutes& routes = routes_[std::move(path)];
    if (!method) {
      routes.any_method = std::move(handler);
      return;
    }
    routes.by_method[*method] = std::move(handler);
    served_.insert(*method);
  }
  void add_fallback(http::verb method, Handler handler) {
    fallbacks_[method] = std::move(handler);
    served_.insert(method);
  }

  // The route's answer; a route that throws is answered 500.
  Answer answer(const Request& req) {
    try {
      return dispatch(req);
    } catch (const std::exception& e) {
      base::log_event(*spdlog::default_logger(), spdlog::level::err,
                      {{"event", "http-error"}, {"server", options.name}}, "{}: {} {}: {}",
                      options.name, std::string(req.method_string()), std::string(req.target()),
                      e.what());
      return text_response(http::status::internal_server_error,
                           std::string("internal error: ") + e.what() + "\n", req.version());
    } catch (...) {
      base::log_event(*spdlog::default_logger(), spdlog::level::err,
                      {{"event", "http-error"}, {"server", options.name}},
                      "{}: {} {}: unknown exception", options.name,
                      std::string(req.method_string()), std::string(req.target()));
      return text_response(http::status::internal_server_error, "internal error\n", req.version());
    }
  }

  // Makes room for a new connection. False when every slot is taken by a connection busy
  // answering. Otherwise the new connection holds a slot: a free one, or the one of the connection
  // that has waited longest for its request, which is then `victim` and must be cut.
  bool admit(std::shared_ptr<HttpConnection>& victim) {
    std::lock_guard lock(mu_);
    while (open_ >= options.max_connections && !waiting_.empty()) {
      const auto oldest = waiting_.begin();
      auto candidate = oldest->second.lock();
      waiting_.erase(oldest);
      // Its slot is taken back here; the connection sees its wait ended (end_waiting() is false)
      // and does not give the slot back again.
      --open_;
      if (candidate) {
        victim = std::move(candidate);
        ++evicted;
        break;
      }
    }
    if (open_ >= options.max_connections) return false;
    ++open_;
    return true;
  }
  void release_slot() {
    std::lock_guard lock(mu_);
    --open_;
  }
  std::size_t open_connections() const {
    std::lock_guard lock(mu_);
    return open_;
  }

  // Connections waiting for a request, oldest wait first: the ones to cut when a new connection
  // needs room.
  std::uint64_t begin_waiting(std::weak_ptr<HttpConnection> connection) {
    std::lock_guard lock(mu_);
    const std::uint64_t ticket = next_ticket_++;
    waiting_.emplace(ticket, std::move(connection));
    return ticket;
  }
  // False when admit() ended the wait first: the connection was chosen to make room.
  bool end_waiting(std::uint64_t ticket) {
    std::lock_guard lock(mu_);
    return waiting_.erase(ticket) == 1;
  }

  // Everything stop() closes: open connections and the ones routes took over.
  std::uint64_t track(std::weak_ptr<Connection> connection) {
    std::lock_guard lock(mu_);
    // Taken-over connections are never untracked, only seen expired: sweep them now and then.
    if (tracked_.size() >= prune_at_) {
      std::erase_if(tracked_, [](const auto& entry) { return entry.second.expired(); });
      prune_at_ = std::max(kMinTrackedPrune, 2 * tracked_.size());
    }
    const std::uint64_t id = next_id_++;
    tracked_.emplace(id, std::move(connection));
    return id;
  }
  void untrack(std::uint64_t id) {
    std::lock_guard lock(mu_);
    tracked_.erase(id);
  }
  std::vector<std::shared_ptr<Connection>> live_connections() const {
    std::vector<std::shared_ptr<Connection>> live;
    std::lock_guard lock(mu_);
    live.reserve(tracked_.size());
    for (const auto& [id, weak] : tracked_) {
      if (auto c = weak.lock()) live.push_back(std::move(c));
    }
    return live;
  }

 private:
  Answer dispatch(const Request& req) const {
    const unsigned version = req.version();
    const std::string_view path = request_path(req);
    if (const auto routes = routes_.find(path); routes != routes_.end()) {
      const PathRoutes& at = routes->second;
      if (at.any_method) return at.any_method(req);
      if (const auto h = at.by_method.find(req.method()); h != at.by_method.end())
        return h->second(req);
      std::set<http::verb> methods;
      for (const auto& [method, handler] : at.by_method) methods.insert(method);
      return method_not_allowed(methods, version);
    }
    if (!served_.contains(req.method())) return method_not_allowed(served_, version);
    if (const auto f = fallbacks_.find(req.method()); f != fallbacks_.end()) return f->second(req);
    return text_response(http::status::not_found, "not found\n", version);
  }

  static Response method_not_allowed(const std::set<http::verb>& allowed, unsigned version) {
    Response res = text_response(http::status::method_not_allowed, "method not allowed\n", version);
    std::string allow;
    for (const http::verb method : allowed) {
      if (!allow.empty()) allow += ", ";
      allow += std::string(http::to_string(method));
    }
    res.set(http::field::allow, allow);
    return res;
  }

  std::map<std::string, PathRoutes, std::less<>> routes_;
  std::map<http::verb, Handler> fallbacks_;
  std::set<http::verb> served_;  // methods some route or fallback takes

  mutable std::mutex mu_;
  std::size_t open_ = 0;  // connections holding a slot
  std::map<std::uint64_t, std::weak_ptr<HttpConnection>> waiting_;
  std::uint64_t next_ticket_ = 1;
  std::unordered_map<std::uint64_t, std::weak_ptr<Connection>> tracked_;
  std::uint64_t next_id_ = 1;
  std::size_t prune_at_ = kMinTrackedPrune;
};

// One connection: read a request, answer it, repeat while the client keeps it alive, or hand the
// socket to a route that takes it over. Owned by the handlers of its pending operation
// (shared_from_this), so it lives exactly as long as it has something to wait for. Everything
// but the constructor runs on its strand (or from stop() once no io thread runs).
class HttpConnection : public Connection, public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(tcp::socket&& socket, std::shared_ptr<Core> core)
      : core_(std::move(core)), stream_(std::move(socket)) {}
  ~HttpConnection() override { finish(); }

  // Serves the connection in the slot admit() gave it.
  void start() {
    holds_slot_ = true;
    id_ = core_->track(weak_from_this());
    read();
  }

  void close_gracefully() override {
    asio::post(stream_.get_executor(),
               [self = shared_from_this()] { self->guarded([&] { self->finish(); }); });
  }

  void abort() override { finish(); }

  // Chosen by admit() to make room: its wait has ended, so it is cut however far it got.
  void cut_for_room() {
    asio::post(stream_.get_executor(),
               [self = shared_from_this()] { self->guarded([&] { self->finish(); }); });
  }

 private:
  template <typename F>
  void guarded(F&& f) noexcept {
    run_guarded(core_->options.name, std::forward<F>(f), [this] { finish(); });
  }

  void read() {
    if (core_->stopping) {
      finish();
      return;
    }
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    // One deadline for the whole request (no route takes a body): a client trickling bytes gets
    // no more time than an idle one.
    stream_.expires_after(core_->options.header_timeout);
    wait_ticket_ = core_->begin_waiting(weak_from_this());
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       self->guarded([&] { self->on_read(ec); });
                     });
  }

  // False when admit() ended the wait first; the slot is then no longer this connection's.
  bool end_waiting() {
    if (wait_ticket_ == 0) return true;
    const bool mine = core_->end_waiting(wait_ticket_);
    wait_ticket_ = 0;
    if (!mine) holds_slot_ = false;
    return mine;
  }

  void on_read(beast::error_code ec) {
    if (!end_waiting()) {
      // Chosen to make room just as its request arrived: it goes all the same, the new
      // connection already has its slot.
      finish();
      return;
    }
    if (ec == beast::error::timeout) {
      // Request incomplete at the deadline: a slow (or idle) client; cut, never answered.
      ++(parser_->got_some() || buffer_.size() > 0 ? core_->cut_slow : core_->cut_idle);
      finish();
      return;
    }
    if (ec) {
      if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
          ec != http::error::end_of_stream) {
        // The client spoke, but not HTTP/1.1 as taken here: say so and hang up.
        write(text_response(http::status::bad_request, "bad request: " + ec.message() + "\n", 11),
              true);
        return;
      }
      finish();
      return;
    }
    Request req = parser_->release();
    Answer answer = core_->answer(req);
    if (auto* takeover = std::get_if<Takeover>(&answer)) {
      hand_over(std::move(*takeover), std::move(req));
      return;
    }
    auto& res = std::get<Response>(answer);
    const bool close = !req.keep_alive() || core_->stopping;
    res.keep_alive(!close);
    write(std::move(res), close);
  }

  void hand_over(Takeover takeover, Request req) {
    if (!takeover) throw std::logic_error("a route answered with an empty takeover");
    stream_.expires_never();
    tcp::socket socket = stream_.release_socket();
    if (auto taken = takeover(std::move(socket), std::move(req))) {
      core_->track(taken);
      // stop() sets stopping, then asks the connections it lists to close: one that listed
      // this connection but not the taker's has set it already, so the taker is asked here.
      if (core_->stopping) taken->close_gracefully();
    }
    // Only now, so that stop(), which waits while any connection is tracked, always sees this
    // one or its taker. The socket is the taker's; the slot is free for another connection.
    finish();
  }

  void write(Response res, bool close) {
    res_ = std::move(res);
    if (close) res_.keep_alive(false);
    res_.prepare_payload();
    stream_.expires_after(core_->options.write_timeout);
    http::async_write(stream_, res_,
                      [self = shared_from_this(), close](beast::error_code ec, std::size_t) {
                        self->guarded([&] {
                          if (ec || close) {
                            if (!ec)
                              self->stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
                            self->finish();
                            return;
                          }
                          self->read();
                        });
                      });
  }

  // Closes the connection and gives up its slot. Idempotent; pending operations then complete
  // with errors and release the connection.
  void finish() {
    if (finished_) return;
    finished_ = true;
    end_waiting();
    if (holds_slot_) {
      holds_slot_ = false;
      core_->release_slot();
    }
    core_->untrack(id_);
    // After a takeover the socket is gone and there is nothing to close.
    if (stream_.socket().is_open()) stream_.close();
  }

  const std::shared_ptr<Core> core_;  // first: destroyed last, after the socket
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Response res_;
  std::uint64_t id_ = 0;
  std::uint64_t wait_ticket_ = 0;  // while waiting for a request: its place in Core's queue
  bool holds_slot_ = false;
  bool finished_ = false;
};

}  // namespace

class HttpServer::Impl {
 public:
  explicit Impl(HttpServerOptions options) : core_(std::make_shared<Core>(std::move(options))) {}
  ~Impl() {
    try {
      stop();
    } catch (const std::exception& e) {
      base::log_event(*spdlog::default_logger(), spdlog::level::err,
                      {{"event", "http-error"}, {"server", core_->options.name}},
                      "{}: stopping: {}", core_->options.name, e.what());
    }
  }

  Core& core() { return *core_; }
  Result<void> start();
  void stop();
  int port() const { return port_.load(); }
  HttpServerStats stats() const;
  std::shared_ptr<asio::io_context> io_context() const {
    return {core_, &core_->ioc};  // shares the Core's ownership
  }

 private:
  void accept();
  void retry_accept(beast::error_code ec);
  // Takes one accepted connection; a failure loses that connection, never the listener.
  void serve(tcp::socket socket) noexcept;

  // Also held by every connection and io thread.
  const std::shared_ptr<Core> core_;

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
