#include "relay/websocket_gateway.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <condition_variable>
#include <deque>
#include <exception>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "net/listener.h"
#include "relay/member_route.h"
#include "relay/member_token.h"
#include "relay/static_files.h"

namespace natsfleet::relay {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
namespace fs = std::filesystem;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kHeaderLimit = std::size_t{8} * 1024;
constexpr std::size_t kBodyLimit = std::size_t{8} * 1024;  // nothing served here takes a body
constexpr std::uintmax_t kMaxStaticFileBytes = std::uintmax_t{16} * 1024 * 1024;
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);
constexpr auto kStopPoll = std::chrono::milliseconds(5);
constexpr std::string_view kWebSocketPath = "/ws";

// No exception may leave an io handler: one that does ends its connection (`finish`), never the
// gateway. `who` names the connection kind in the log.
template <typename F, typename Finish>
void run_guarded(const char* who, F&& f, Finish&& finish) noexcept {
  try {
    f();
    return;
  } catch (const std::exception& e) {
    spdlog::error("relay gateway: {}: {}", who, e.what());
  } catch (...) {
    spdlog::error("relay gateway: {}: unknown exception", who);
  }
  try {
    finish();
  } catch (const std::exception& e) {
    spdlog::error("relay gateway: {}: cannot close: {}", who, e.what());
  } catch (...) {
    spdlog::error("relay gateway: {}: cannot close", who);
  }
}

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

Response text_response(http::status status, std::string body, unsigned version) {
  Response res{status, version};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  return res;
}

// Something stop() has to close: a plain HTTP connection or a WebSocket session.
class Connection {
 public:
  virtual ~Connection() = default;
  // From stop()'s thread while the io threads run: begin a clean close on the connection's strand.
  virtual void close_gracefully() = 0;
  // From stop()'s thread once no io thread runs: close at once.
  virtual void abort() = 0;
  // From any thread: cut the connection if it is still waiting for a request (to make room).
  virtual void evict() {}
};

// Runs the attach hook on a thread of its own, so a hook that talks to the broker never holds up
// an io thread.
class AttachNotifier {
 public:
  void set_hook(AttachHook hook) {
    std::lock_guard lock(mu_);
    hook_ = std::make_shared<AttachHook>(std::move(hook));
  }

  void start() {
    std::lock_guard lock(mu_);
    thread_ = std::thread([this] { run(); });
  }

  void notify(const std::string& member) {
    {
      std::lock_guard lock(mu_);
      if (stopped_ || !hook_ || !*hook_) return;
      pending_.push_back(member);
    }
    cv_.notify_one();
  }

  // Lets a running hook finish; hooks still queued are not run.
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopped_ = true;
      pending_.clear();
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stopped_ || !pending_.empty(); });
      if (stopped_) return;
      const std::string member = std::move(pending_.front());
      pending_.pop_front();
      const std::shared_ptr<AttachHook> hook = hook_;
      lock.unlock();
      try {
        if (hook && *hook) (*hook)(member);
      } catch (const std::exception& e) {
        spdlog::error("relay gateway: attach hook failed: {}", e.what());
      } catch (...) {
        spdlog::error("relay gateway: attach hook failed with an unknown exception");
      }
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<AttachHook> hook_;
  std::deque<std::string> pending_;
  bool stopped_ = false;
  std::thread thread_;
};

// What sessions share with the gateway. Every session holds it, so a session that a concurrent
// registry delivery keeps alive after stop() still has its io_context.
struct Core {
  Core(GatewayOptions o, SessionRegistry& r) : options(std::move(o)), registry(r) {}

  const GatewayOptions options;
  SessionRegistry& registry;
  fs::path web_root;  // canonical; empty: no files
  net::io_context ioc;
  AttachNotifier notifier;
  std::atomic<bool> stopping{false};

  std::atomic<std::size_t> sessions{0};  // reserved at upgrade, released when the session ends
  std::atomic<std::size_t> http_connections{0};
  std::atomic<std::uint64_t> attached{0};
  std::atomic<std::uint64_t> refused_member{0};
  std::atomic<std::uint64_t> refused_full{0};
  std::atomic<std::uint64_t> refused_origin{0};
  std::atomic<std::uint64_t> refused_unauthenticated{0};
  std::atomic<std::uint64_t> refused_expired{0};
  std::atomic<std::uint64_t> refused_bad_token{0};
  std::atomic<std::uint64_t> refused_member_mismatch{0};
  std::atomic<std::uint64_t> cut_idle{0};
  std::atomic<std::uint64_t> cut_slow{0};
  std::atomic<std::uint64_t> evicted{0};
  std::atomic<std::uint64_t> refused_busy{0};
  std::atomic<std::uint64_t> dropped_slow{0};
  std::atomic<std::uint64_t> closed_idle{0};
  std::atomic<std::uint64_t> frames_sent{0};

  std::uint64_t track(const std::shared_ptr<Connection>& c) {
    std::lock_guard lock(connections_mu_);
    const std::uint64_t id = next_connection_++;
    connections_.emplace(id, c);
    return id;
  }
  void untrack(std::uint64_t id) {
    std::lock_guard lock(connections_mu_);
    connections_.erase(id);
  }
  std::vector<std::shared_ptr<Connection>> live_connections() {
    std::vector<std::shared_ptr<Connection>> live;
    std::lock_guard lock(connections_mu_);
    live.reserve(connections_.size());
    for (const auto& [id, weak] : connections_) {
      if (auto c = weak.lock()) live.push_back(std::move(c));
    }
    return live;
  }

  // HTTP connections waiting for a request, oldest wait first: the ones to cut when a new
  // connection needs room. A wait ends (forget_waiting) when the request has been read.
  std::uint64_t begin_waiting(const std::shared_ptr<Connection>& c) {
    std::lock_guard lock(connections_mu_);
    const std::uint64_t ticket = next_wait_++;
    waiting_.emplace(ticket, c);
    return ticket;
  }
  void forget_waiting(std::uint64_t ticket) {
    std::lock_guard lock(connections_mu_);
    waiting_.erase(ticket);
  }
  // Asks the connection that has waited longest to go; false when none is waiting.
  bool evict_oldest_waiting() {
    std::shared_ptr<Connection> victim;
    {
      std::lock_guard lock(connections_mu_);
      while (!waiting_.empty() && !victim) {
        victim = waiting_.begin()->second.lock();
        waiting_.erase(waiting_.begin());
      }
    }
    if (!victim) return false;
    victim->evict();
    return true;
  }

  // Reserves a session slot; false when max_sessions are taken.
  bool reserve_session() {
    std::size_t now = sessions.load();
    do {
      if (now >= options.max_sessions) return false;
    } while (!sessions.compare_exchange_weak(now, now + 1));
    return true;
  }

 private:
  std::mutex connections_mu_;
  std::unordered_map<std::uint64_t, std::weak_ptr<Connection>> connections_;
  std::uint64_t next_connection_ = 1;
  std::map<std::uint64_t, std::weak_ptr<Connection>> waiting_;
  std::uint64_t next_wait_ = 1;
};

// One attached browser. Its socket lives on a strand; deliver() may come from any thread and only
// touches the outbound queue (under out_mu_) and posts to the strand.
class WsSession : public Connection,
                  public RelaySession,
                  public std::enable_shared_from_this<WsSession> {
 public:
  WsSession(tcp::socket&& socket, std::shared_ptr<Core> core, std::string member)
      : core_(std::move(core)),
        ws_(std::move(socket)),
        timer_(ws_.get_executor()),
        member_(std::move(member)) {}

  ~WsSession() override {
    if (holds_slot_) --core_->sessions;
    core_->untrack(connection_id_);
  }

  // Completes the upgrade the HTTP connection read.
  void accept(Request req) {
    connection_id_ = core_->track(shared_from_this());
    upgrade_ = std::move(req);
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = core_->options.request_timeout;  // also bounds the close
    timeouts.idle_timeout = websocket::stream_base::none();       // pings are ours, see on_timer
    timeouts.keep_alive_pings = false;
    ws_.set_option(timeouts);
    ws_.read_message_max(core_->options.max_inbound_message_bytes);
    ws_.control_callback([this](websocket::frame_type, beast::string_view) {
      last_heard_ = Clock::now();  // a pong (or a ping) shows the client is alive
    });
    ws_.async_accept(upgrade_, [self = shared_from_this()](beast::error_code ec) {
      self->guarded([&] { self->on_accept(ec); });
    });
  }

  bool deliver(std::shared_ptr<const std::string> payload) override {
    if (!payload) return false;
    std::lock_guard lock(out_mu_);
    if (closed_) return false;
    const auto& limits = core_->options;
    const bool overflow =
        queue_.size() >= limits.max_queued_messages ||
        (!queue_.empty() && queued_bytes_ + payload->size() > limits.max_queued_bytes);
    if (overflow) {
      // The client is not reading: waiting for it would delay everyone else's statuses.
      closed_ = true;
      ++core_->dropped_slow;
      net::post(ws_.get_executor(),
                [self = shared_from_this()] { self->guarded([&] { self->finish(); }); });
      return false;
    }
    queued_bytes_ += payload->size();
    queue_.push_back(std::move(payload));
    if (!write_scheduled_) {
      write_scheduled_ = true;
      net::post(ws_.get_executor(),
                [self = shared_from_this()] { self->guarded([&] { self->write_next(); }); });
    }
    return true;
  }

  bool closed() const override {
    std::lock_guard lock(out_mu_);
    return closed_;
  }

  void close_gracefully() override {
    net::post(ws_.get_executor(), [self = shared_from_this()] {
      self->guarded([&] { self->start_close(websocket::close_code::going_away); });
    });
  }

  void abort() override { finish(); }

 private:
  template <typename F>
  void guarded(F&& f) noexcept {
    run_guarded("session", std::forward<F>(f), [this] { finish(); });
  }

  void on_accept(beast::error_code ec) {
    upgrade_ = {};
    if (ec || core_->stopping) {
      finish();
      return;
    }
    registry_id_ = core_->registry.add(member_, shared_from_this());
    registered_ = true;
    ++core_->attached;
    core_->notifier.notify(member_);
    last_heard_ = last_ping_ = Clock::now();
    arm_timer();
    read();
  }

  void read() {
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->guarded([&] { self->on_read(ec); });
    });
  }

  void on_read(beast::error_code ec) {
    if (ec) {
      finish();  // the client closed (Beast has answered its close frame), vanished or misbehaved
      return;
    }
    last_heard_ = Clock::now();
    buffer_.consume(buffer_.size());  // client frames carry nothing the relay acts on
    read();
  }

  void arm_timer() {
    const auto idle_at = last_heard_ + core_->options.idle_timeout;
    const auto ping_at = last_ping_ + core_->options.ping_interval;
    timer_.expires_at(std::min(idle_at, ping_at));
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      self->guarded([&] { self->on_timer(ec); });
    });
  }

  void on_timer(beast::error_code ec) {
    if (ec || finished_ || closing_) return;
    const auto now = Clock::now();
    if (now >= last_heard_ + core_->options.idle_timeout) {
      // Silent for too long: a closing handshake would wait for the same silence, so cut it.
      ++core_->closed_idle;
      finish();
      return;
    }
    if (now >= last_ping_ + core_->options.ping_interval) {
      last_ping_ = now;
      if (!ping_in_flight_) {
        ping_in_flight_ = true;
        ws_.async_ping({}, [self = shared_from_this()](beast::error_code ping_ec) {
          self->guarded([&] {
            self->ping_in_flight_ = false;
            if (ping_ec) self->finish();
          });
        });
      }
    }
    arm_timer();
  }

  void write_next() {
    {
      std::lock_guard lock(out_mu_);
      if (closed_ || queue_.empty()) {
        write_scheduled_ = false;
        return;
      }
      current_ = std::move(queue_.front());
      queue_.pop_front();
      queued_bytes_ -= current_->size();
    }
    ws_.text(true);
    ws_.async_write(net::buffer(*current_),
                    [self = shared_from_this()](beast::error_code ec, std::size_t) {
                      self->guarded([&] { self->on_write(ec); });
                    });
  }

  void on_write(beast::error_code ec) {
    current_.reset();
    if (ec) {
      finish();
      return;
    }
    ++core_->frames_sent;
    write_next();
  }

  void start_close(websocket::close_code code) {
    if (finished_ || closing_) return;
    if (!registered_) {  // still upgrading: nothing to say goodbye to
      finish();
      return;
    }
    closing_ = true;
    stop_delivery();
    timer_.cancel();
    ws_.async_close(code, [self = shared_from_this()](beast::error_code) {
      self->guarded([&] { self->finish(); });
    });
  }

  void stop_delivery() {
    std::lock_guard lock(out_mu_);
    closed_ = true;
    queue_.clear();
    queued_bytes_ = 0;
  }

  // Ends the session: no more statuses, out of the registry, socket closed. Idempotent; the
  // pending operations then complete with errors and release the session.
  void finish() {
    if (finished_) return;
    finished_ = true;
    stop_delivery();
    timer_.cancel();
    if (registered_) {
      registered_ = false;
      core_->registry.remove(registry_id_);
    }
    core_->untrack(connection_id_);
    if (holds_slot_) {
      holds_slot_ = false;
      --core_->sessions;
    }
    beast::get_lowest_layer(ws_).close();
  }

  const std::shared_ptr<Core> core_;  // first: destroyed last, after the socket
  websocket::stream<beast::tcp_stream> ws_;
  net::steady_timer timer_;
  const std::string member_;
  Request upgrade_;
  beast::flat_buffer buffer_;

  // Strand-only state.
  std::shared_ptr<const std::string> current_;  // the status being written
  Clock::time_point last_heard_{};
  Clock::time_point last_ping_{};
  SessionId registry_id_ = 0;
  std::uint64_t connection_id_ = 0;
  bool registered_ = false;
  bool holds_slot_ = true;  // the HTTP connection reserved it for this session
  bool ping_in_flight_ = false;
  bool closing_ = false;
  bool finished_ = false;

  // The outbound queue, shared with deliver() callers.
  mutable std::mutex out_mu_;
  std::deque<std::shared_ptr<const std::string>> queue_;
  std::size_t queued_bytes_ = 0;
  bool write_scheduled_ = false;
  bool closed_ = false;
};

// One plain HTTP connection: answer requests while the client keeps it alive, or hand the socket
// to a WsSession on a valid upgrade.
class HttpSession : public Connection, public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket&& socket, std::shared_ptr<Core> core)
      : core_(std::move(core)), stream_(std::move(socket)) {
    ++core_->http_connections;
  }
  ~HttpSession() override {
    --core_->http_connections;
    core_->untrack(connection_id_);
  }

  void start() {
    connection_id_ = core_->track(shared_from_this());
    read();
  }

  void close_gracefully() override {
    net::post(stream_.get_executor(),
              [self = shared_from_this()] { self->guarded([&] { self->finish(); }); });
  }

  void abort() override { finish(); }

  void evict() override {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->guarded([&] {
        // It may have got its request meanwhile: then it is busy, not idle, and stays.
        if (self->wait_ticket_ == 0 || self->finished_) return;
        self->wait_ticket_ = 0;
        ++self->core_->evicted;
        self->finish();
      });
    });
  }

 private:
  template <typename F>
  void guarded(F&& f) noexcept {
    run_guarded("http", std::forward<F>(f), [this] { finish(); });
  }

  void read() {
    if (core_->stopping) {
      finish();
      return;
    }
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    // One deadline for the whole request (nothing served here takes a body): a client trickling
    // bytes gets no more time than an idle one.
    stream_.expires_after(std::min(core_->options.header_timeout, core_->options.request_timeout));
    wait_ticket_ = core_->begin_waiting(shared_from_this());
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       self->guarded([&] { self->on_read(ec); });
                     });
  }

  void on_read(beast::error_code ec) {
    if (wait_ticket_ != 0) {
      core_->forget_waiting(wait_ticket_);
      wait_ticket_ = 0;
    }
    if (ec == beast::error::timeout) {
      // Headers incomplete at the deadline: a slow (or idle) client; cut, never answered.
      ++(parser_->got_some() || buffer_.size() > 0 ? core_->cut_slow : core_->cut_idle);
      finish();
      return;
    }
    if (ec) {
      if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
          ec != http::error::end_of_stream) {
        write(text_response(http::status::bad_request, "bad request\n", 11), true);
        return;
      }
      finish();
      return;
    }
    Request req = parser_->release();
    const std::string_view target(req.target().data(), req.target().size());
    const auto question = target.find('?');
    const std::string_view path = target.substr(0, question);
    if (path == kWebSocketPath) {
      upgrade(std::move(req), question == std::string_view::npos ? std::string_view()
                                                                 : target.substr(question + 1));
      return;
    }
    Response res = respond(req, path);
    const bool close = !req.keep_alive() || core_->stopping;
    res.keep_alive(!close);
    write(std::move(res), close);
  }

  void upgrade(Request req, std::string_view query) {
    const unsigned version = req.version();
    if (req.method() != http::verb::get || !websocket::is_upgrade(req)) {
      Response res = text_response(http::status::upgrade_required,
                                   "this path takes WebSocket upgrades only\n", version);
      res.set(http::field::upgrade, "websocket");
      write(std::move(res), true);
      return;
    }
    if (!origin_allowed(req)) {
      ++core_->refused_origin;
      write(text_response(http::status::forbidden, "this page's origin may not attach here\n",
                          version),
            true);
      return;
    }
    auto member = authenticate(req, query);
    if (!member) return;  // answered
    if (core_->stopping) {
      write(text_response(http::status::service_unavailable, "shutting down\n", version), true);
      return;
    }
    if (!core_->reserve_session()) {
      ++core_->refused_full;
      Response res = text_response(http::status::service_unavailable,
                                   "too many sessions on this replica\n", version);
      res.set(http::field::retry_after, "5");
      write(std::move(res), true);
      return;
    }
    stream_.expires_never();
    auto session = std::make_shared<WsSession>(stream_.release_socket(), core_, std::move(*member));
    finish();  // the socket is the session's now
    session->accept(std::move(req));
  }

  // The Origin rule of GatewayOptions::allowed_origins.
  bool origin_allowed(const Request& req) const {
    const auto origin_field = req.find(http::field::origin);
    if (origin_field == req.end()) return true;
    std::string_view origin(origin_field->value().data(), origin_field->value().size());
    while (!origin.empty() && origin.back() == '/') origin.remove_suffix(1);
    const auto& allowed = core_->options.allowed_origins;
    if (!allowed.empty()) {
      return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& entry) {
        return entry == "*" ||
               beast::iequals(entry, beast::string_view(origin.data(), origin.size()));
      });
    }
    // Same origin: the page's host:port is the one this request was sent to.
    const auto scheme_end = origin.find("://");
    if (scheme_end == std::string_view::npos) return false;  // "null", or not an origin at all
    const std::string_view origin_host = origin.substr(scheme_end + 3);
    const auto host = req.find(http::field::host);
    if (host == req.end()) return false;
    return beast::iequals(beast::string_view(origin_host.data(), origin_host.size()),
                          host->value());
  }

  // The member this upgrade attaches to, or nothing once a refusal has been written. The token
  // and the secret are never logged or echoed.
  std::optional<std::string> authenticate(const Request& req, std::string_view query) {
    const unsigned version = req.version();
    auto refuse = [&](http::status status, std::atomic<std::uint64_t>& counter,
                      std::string body) -> std::optional<std::string> {
      ++counter;
      Response res = text_response(status, std::move(body), version);
      if (status == http::status::unauthorized)
        res.set(http::field::www_authenticate, "Bearer realm=\"natsfleet\"");
      write(std::move(res), true);
      return std::nullopt;
    };
    auto named = query_parameter(query, "member");
    if (!named) {
      ++core_->refused_member;
      write(text_response(http::status::bad_request, named.error().describe() + "\n", version),
            true);
      return std::nullopt;
    }
    const auto& options = core_->options;
    std::optional<std::string> proven;  // by the proxy's header or a token
    if (!options.member_header.empty()) {
      if (const auto header = req.find(options.member_header); header != req.end()) {
        std::string value(header->value());
        if (!valid_member_id(value)) {
          return refuse(http::status::forbidden, core_->refused_bad_token,
                        "the authenticating proxy named an invalid member\n");
        }
        proven = std::move(value);
      }
    }
    if (!proven && !options.token_secret.empty()) {
      auto token = query_parameter(query, "token");
      if (!token) {
        return refuse(http::status::bad_request, core_->refused_bad_token,
                      token.error().describe() + "\n");
      }
      std::optional<std::string> given = std::move(token.value());
      if (!given) {
        if (const auto auth = req.find(http::field::authorization); auth != req.end()) {
          const std::string_view value(auth->value().data(), auth->value().size());
          constexpr std::string_view kBearer = "Bearer ";
          if (value.size() > kBearer.size() &&
              beast::iequals(beast::string_view(value.data(), kBearer.size()), "Bearer "))
            given = std::string(value.substr(kBearer.size()));
        }
      }
      if (!given) {
        return refuse(http::status::unauthorized, core_->refused_unauthenticated,
                      "a member token is required (token=...)\n");
      }
      TokenCheck check =
          check_member_token(*given, options.token_secret, std::chrono::system_clock::now());
      switch (check.verdict) {
        case TokenVerdict::ok:
          proven = std::move(check.member);
          break;
        case TokenVerdict::expired:
          return refuse(http::status::unauthorized, core_->refused_expired,
                        "the member token has expired\n");
        case TokenVerdict::malformed:
        case TokenVerdict::bad_signature:
          return refuse(http::status::forbidden, core_->refused_bad_token,
                        "the member token is not valid\n");
      }
    }
    const bool authenticating = !options.member_header.empty() || !options.token_secret.empty();
    if (authenticating && !proven) {
      return refuse(http::status::unauthorized, core_->refused_unauthenticated,
                    "authentication is required\n");
    }
    std::optional<std::string> asked = std::move(named.value());
    if (proven) {
      if (asked && *asked != *proven) {
        return refuse(http::status::forbidden, core_->refused_member_mismatch,
                      "member names another member than the one authenticated\n");
      }
      return proven;
    }
    auto member = member_from_query(query);
    if (!member) {
      ++core_->refused_member;
      write(text_response(http::status::bad_request, member.error().describe() + "\n", version),
            true);
      return std::nullopt;
    }
    return std::move(member.value());
  }

  Response respond(const Request& req, std::string_view path) {
    const unsigned version = req.version();
    if (req.method() != http::verb::get) {
      Response res =
          text_response(http::status::method_not_allowed, "method not allowed\n", version);
      res.set(http::field::allow, "GET");
      return res;
    }
    if (path == "/healthz") return text_response(http::status::ok, "ok\n", version);
    const auto& pages = core_->options.pages;
    if (const auto page = pages.find(std::string(path)); page != pages.end()) {
      return content_response(page->second.content_type, page->second.body, version);
    }
    if (!core_->web_root.empty()) {
      if (const auto file = resolve_static_file(core_->web_root, path)) {
        if (auto body = read_file(*file)) {
          return content_response(content_type_for(*file), std::move(*body), version);
        }
      }
    }
    return text_response(http::status::not_found, "not found\n", version);
  }

  static Response content_response(std::string_view content_type, std::string body,
                                   unsigned version) {
    Response res{http::status::ok, version};
    res.set(http::field::content_type,
            beast::string_view(content_type.data(), content_type.size()));
    res.set(http::field::cache_control, "no-cache");
    res.set("X-Content-Type-Options", "nosniff");
    res.body() = std::move(body);
    return res;
  }

  static std::optional<std::string> read_file(const fs::path& file) {
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    if (ec || size > kMaxStaticFileBytes) return std::nullopt;
    std::ifstream in(file, std::ios::binary);
    if (!in) return std::nullopt;
    std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) return std::nullopt;
    return body;
  }

  void write(Response res, bool close) {
    res_ = std::move(res);
    if (close) res_.keep_alive(false);
    res_.prepare_payload();
    stream_.expires_after(core_->options.request_timeout);
    http::async_write(stream_, res_,
                      [self = shared_from_this(), close](beast::error_code ec, std::size_t) {
                        self->guarded([&] {
                          if (ec || close) {
                            if (!ec) {
                              self->stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
                            }
                            self->finish();
                            return;
                          }
                          self->read();
                        });
                      });
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    core_->untrack(connection_id_);
    if (wait_ticket_ != 0) {
      core_->forget_waiting(wait_ticket_);
      wait_ticket_ = 0;
    }
    // After an upgrade the socket is gone and closing is a no-op.
    if (stream_.socket().is_open()) stream_.close();
  }

  const std::shared_ptr<Core> core_;  // first: destroyed last, after the socket
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Response res_;
  std::uint64_t connection_id_ = 0;
  std::uint64_t wait_ticket_ = 0;  // while waiting for a request: its place in Core's queue
  bool finished_ = false;
};

}  // namespace

class WebSocketGateway::Impl {
 public:
  Impl(GatewayOptions options, SessionRegistry& registry)
      : options_(std::move(options)), core_(std::make_shared<Core>(options_, registry)) {}
  ~Impl() {
    try {
      stop();
    } catch (const std::exception& e) {
      spdlog::error("relay gateway: stopping: {}", e.what());
    }
  }

  void on_attach(AttachHook hook) { core_->notifier.set_hook(std::move(hook)); }

  Result<void> start();
  void stop();
  int port() const { return port_.load(); }
  GatewayStats stats() const;

 private:
  void accept();
  void retry_accept(beast::error_code ec);
  // Takes one accepted connection; a failure loses that connection, never the listener.
  void serve(tcp::socket socket) noexcept;

  const GatewayOptions options_;
  // Also held by every session and io thread; lives on after stop() for stats().
  const std::shared_ptr<Core> core_;

  std::mutex mu_;  // start() and stop() may race
  bool started_ = false;
  bool running_ = false;
  std::unique_ptr<tcp::acceptor> acceptor_;
  std::unique_ptr<net::steady_timer> retry_timer_;
  std::vector<std::thread> threads_;
  std::atomic<int> port_{0};
};

Result<void> WebSocketGateway::Impl::start() {
  std::lock_guard lock(mu_);
  if (started_) return Result<void>(Errc::invalid_argument, "relay gateway already started");
  started_ = true;

  const std::string address = fmt::format("{}:{}", options_.host, options_.port);
  if (!options_.web_root.empty()) {
    std::error_code ec;
    core_->web_root = fs::canonical(options_.web_root, ec);
    if (ec || !fs::is_directory(core_->web_root, ec)) {
      return Result<void>(
          Errc::invalid_argument,
          fmt::format("relay gateway: web root {} is not a directory", options_.web_root.string()));
    }
  }
  if (options_.io_threads < 1 || options_.max_queued_messages < 1 ||
      options_.ping_interval.count() <= 0 || options_.idle_timeout.count() <= 0) {
    return Result<void>(Errc::invalid_argument,
                        "relay gateway: io_threads, max_queued_messages, ping_interval and "
                        "idle_timeout must be positive");
  }

  auto fail = [&](const char* what, const beast::error_code& ec) {
    acceptor_.reset();
    return Result<void>(
        Error{static_cast<std::error_code>(ec),
              fmt::format("relay gateway cannot {} {}: {}", what, address, ec.message())});
  };
  beast::error_code ec;
  tcp::resolver resolver(core_->ioc);
  const auto endpoints =
      resolver.resolve(options_.host, std::to_string(options_.port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec) return fail("resolve", ec);
  if (endpoints.empty()) return fail("resolve", net::error::host_not_found);
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();

  acceptor_ = std::make_unique<tcp::acceptor>(net::make_strand(core_->ioc));
  if (auto failed = natsfleet::sockets::listen_at(*acceptor_, endpoint))
    return fail(failed->step, failed->error);
  const tcp::endpoint bound = acceptor_->local_endpoint(ec);
  if (ec) return fail("listen on", ec);
  retry_timer_ = std::make_unique<net::steady_timer>(acceptor_->get_executor());

  running_ = true;
  core_->notifier.start();
  port_ = bound.port();
  accept();
  // No work guard: once stop() has closed the acceptor and every connection, run() returns.
  for (int i = 0; i < options_.io_threads; ++i) {
    threads_.emplace_back([core = core_] {
      for (;;) {
        try {
          core->ioc.run();
          return;
        } catch (const std::exception& e) {
          // Handlers are written not to throw; if one does, keep serving rather than go dark.
          spdlog::error("relay gateway: {}", e.what());
        } catch (...) {
          spdlog::error("relay gateway: unknown exception");
        }
      }
    });
  }
  return {};
}

void WebSocketGateway::Impl::accept() {
  acceptor_->async_accept(net::make_strand(core_->ioc),
                          [this](beast::error_code ec, tcp::socket socket) {
                            if (ec == net::error::operation_aborted || core_->stopping) return;
                            if (ec) {
                              retry_accept(ec);
                              return;
                            }
                            serve(std::move(socket));
                            accept();
                          });
}

void WebSocketGateway::Impl::retry_accept(beast::error_code ec) {
  // Typically out of descriptors: back off instead of spinning on the same error.
  spdlog::warn("relay gateway: accept failed: {}", ec.message());
  retry_timer_->expires_after(kAcceptRetry);
  retry_timer_->async_wait([this](beast::error_code wait_ec) {
    if (!wait_ec && !core_->stopping) accept();
  });
}

void WebSocketGateway::Impl::serve(tcp::socket socket) noexcept {
  try {
    if (core_->http_connections >= options_.max_http_connections &&
        !core_->evict_oldest_waiting()) {
      // Every connection is busy answering: this one has to wait for another try.
      ++core_->refused_busy;
      beast::error_code ec;
      socket.close(ec);
      return;
    }
    natsfleet::sockets::close_on_exec(socket.native_handle());
    std::make_shared<HttpSession>(std::move(socket), core_)->start();
  } catch (const std::exception& e) {
    spdlog::error("relay gateway: accept: {}", e.what());
  } catch (...) {
    spdlog::error("relay gateway: accept: unknown exception");
  }
}

void WebSocketGateway::Impl::stop() {
  std::lock_guard lock(mu_);
  if (!running_) return;
  running_ = false;
  core_->stopping = true;

  // Clean phase, io threads still running: no new connections, a close frame to every session.
  net::post(acceptor_->get_executor(), [this] {
    beast::error_code ec;
    acceptor_->close(ec);
    retry_timer_->cancel();
  });
  for (const auto& connection : core_->live_connections()) connection->close_gracefully();
  const auto deadline = Clock::now() + options_.stop_timeout;
  while ((core_->sessions > 0 || core_->http_connections > 0) && Clock::now() < deadline) {
    std::this_thread::sleep_for(kStopPoll);
  }

  // Cut phase: whatever did not finish in time is closed with no io thread running.
  core_->ioc.stop();
  for (auto& thread : threads_) thread.join();
  threads_.clear();
  for (const auto& connection : core_->live_connections()) connection->abort();
  {
    beast::error_code ec;
    acceptor_->close(ec);
    retry_timer_->cancel();
  }
  // The cancelled operations' handlers hold their sessions: run them so nothing stays queued in an
  // io_context that the sessions themselves keep alive.
  core_->ioc.restart();
  core_->ioc.run_for(options_.stop_timeout);
  if (!core_->ioc.stopped()) spdlog::warn("relay gateway: some connections did not close in time");
  retry_timer_.reset();
  acceptor_.reset();
  core_->notifier.stop();
  port_ = 0;
}

GatewayStats WebSocketGateway::Impl::stats() const {
  GatewayStats s;
  s.sessions = core_->sessions;
  s.http_connections = core_->http_connections;
  s.attached = core_->attached;
  s.refused_member = core_->refused_member;
  s.refused_full = core_->refused_full;
  s.refused_origin = core_->refused_origin;
  s.refused_unauthenticated = core_->refused_unauthenticated;
  s.refused_expired = core_->refused_expired;
  s.refused_bad_token = core_->refused_bad_token;
  s.refused_member_mismatch = core_->refused_member_mismatch;
  s.cut_idle = core_->cut_idle;
  s.cut_slow = core_->cut_slow;
  s.evicted = core_->evicted;
  s.refused_busy = core_->refused_busy;
  s.dropped_slow = core_->dropped_slow;
  s.closed_idle = core_->closed_idle;
  s.frames_sent = core_->frames_sent;
  return s;
}

WebSocketGateway::WebSocketGateway(GatewayOptions options, SessionRegistry& registry)
    : impl_(std::make_unique<Impl>(std::move(options), registry)) {}

WebSocketGateway::~WebSocketGateway() = default;

void WebSocketGateway::on_attach(AttachHook hook) { impl_->on_attach(std::move(hook)); }

Result<void> WebSocketGateway::start() { return impl_->start(); }

void WebSocketGateway::stop() { impl_->stop(); }

int WebSocketGateway::port() const { return impl_->port(); }

GatewayStats WebSocketGateway::stats() const { return impl_->stats(); }

}  // namespace natsfleet::relay
