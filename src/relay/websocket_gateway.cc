#include "relay/websocket_gateway.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <condition_variable>
#include <deque>
#include <exception>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <variant>

#include "base/log_event.h"
#include "net/http_server.h"
#include "relay/member_route.h"
#include "relay/member_token.h"
#include "relay/static_files.h"
#include "relay/ws_session.h"

namespace natsfleet::relay {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace fs = std::filesystem;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using net::Answer;
using net::Request;
using net::Response;
using net::text_response;

namespace {

constexpr std::uintmax_t kMaxStaticFileBytes = std::uintmax_t{16} * 1024 * 1024;
constexpr std::string_view kWebSocketPath = "/ws";

// The member an upgrade attaches to, or the answer refusing it.
using Verdict = std::variant<std::string, Response>;

}  // namespace

// The gateway's own part of serving HTTP: its routes (GET /healthz, the upgrade at /ws, pages and
// static files), the Origin and member checks, and the sessions' shared state. The connections
// themselves are the HTTP server's until an upgrade takes one over.
class WebSocketGateway::Impl {
 public:
  Impl(GatewayOptions options, SessionRegistry& registry)
      : server_(server_options(options)),
        core_(std::make_shared<GatewayCore>(std::move(options), registry, server_.io_context())) {
    // Routes run only while the server does, which stops before this object is gone.
    server_.route(http::verb::get, "/healthz", [](const Request& req) -> Answer {
      return text_response(http::status::ok, "ok\n", req.version());
    });
    server_.route_any_method(std::string(kWebSocketPath),
                             [this](const Request& req) { return upgrade(req); });
    server_.fallback(http::verb::get, [this](const Request& req) { return serve_page(req); });
  }
  ~Impl() {
    try {
      stop();
    } catch (const std::exception& e) {
      base::log_event(*spdlog::default_logger(), spdlog::level::err,
                      {{"event", "relay-error"}, {"server", "relay"}},
                      "relay gateway: stopping: {}", e.what());
    }
  }

  void on_attach(AttachHook hook) { core_->notifier.set_hook(std::move(hook)); }

  Result<void> start();
  void stop();
  int port() const { return server_.port(); }
  GatewayStats stats() const;

 private:
  static net::HttpServerOptions server_options(const GatewayOptions& options) {
    return {
        .name = "relay gateway",
        .host = options.host,
        .port = options.port,
        .header_timeout = std::min(options.header_timeout, options.request_timeout),
        .write_timeout = options.request_timeout,
        .max_connections = options.max_http_connections,
        .stop_timeout = options.stop_timeout,
        .io_threads = options.io_threads,
    };
  }

  Answer upgrade(const Request& req) {
    const unsigned version = req.version();
    if (req.method() != http::verb::get || !websocket::is_upgrade(req)) {
      Response res = text_response(http::status::upgrade_required,
                                   "this path takes WebSocket upgrades only\n", version);
      res.set(http::field::upgrade, "websocket");
      return res;
    }
    if (!origin_allowed(req)) {
      ++core_->refused_origin;
      return text_response(http::status::forbidden, "this page's origin may not attach here\n",
                           version);
    }
    Verdict verdict = authenticate(req, net::request_query(req));
    if (auto* refusal = std::get_if<Response>(&verdict)) return std::move(*refusal);
    if (core_->stopping) {
      return text_response(http::status::service_unavailable, "shutting down\n", version);
    }
    if (!core_->reserve_session()) {
      ++core_->refused_full;
      Response res = text_response(http::status::service_unavailable,
                                   "too many sessions on this replica\n", version);
      res.set(http::field::retry_after, "5");
      return res;
    }
    return net::Takeover([core = core_, member = std::move(std::get<std::string>(verdict))](
                             tcp::socket socket, Request upgrade) mutable {
      return start_ws_session(std::move(socket), core, std::move(member), std::move(upgrade));
    });
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

  // The member this upgrade attaches to, or the refusal to answer. The token and the secret are
  // never logged or echoed.
  Verdict authenticate(const Request& req, std::string_view query) {
    const unsigned version = req.version();
    auto named = query_parameter(query, "member");
    if (!named) {
      return refusal(version, http::status::bad_request, core_->refused_member,
                     named.error().describe() + "\n");
    }
    const auto& options = core_->options;
    std::optional<std::string> proven;  // by the proxy's header or a token
    if (!options.member_header.empty()) {
      if (const auto header = req.find(options.member_header); header != req.end()) {
        std::string value(header->value());
        if (!valid_member_id(value)) {
          return refusal(version, http::status::forbidden, core_->refused_bad_token,
                         "the authenticating proxy named an invalid member\n");
        }
        proven = std::move(value);
      }
    }
    if (!proven && !options.token_secret.empty()) {
      Verdict by_token = member_by_token(req, query);
      auto* member = std::get_if<std::string>(&by_token);
      if (!member) return by_token;
      proven = std::move(*member);
    }
    const bool authenticating = !options.member_header.empty() || !options.token_secret.empty();
    if (authenticating && !proven) {
      return refusal(version, http::status::unauthorized, core_->refused_unauthenticated,
                     "authentication is required\n");
    }
    std::optional<std::string> asked = std::move(named.value());
    if (proven) {
      if (asked && *asked != *proven) {
        return refusal(version, http::status::forbidden, core_->refused_member_mismatch,
                       "member names another member than the one authenticated\n");
      }
      return std::move(*proven);
    }
    auto member = member_from_query(query);
    if (!member) {
      return refusal(version, http::status::bad_request, core_->refused_member,
                     member.error().describe() + "\n");
    }
    return std::move(member.value());
  }

  // The member a token proves (token=..., else an Authorization: Bearer header), or the refusal.
  Verdict member_by_token(const Request& req, std::string_view query) {
    const unsigned version = req.version();
    auto token = query_parameter(query, "token");
    if (!token) {
      return refusal(version, http::status::bad_request, core_->refused_bad_token,
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
      return refusal(version, http::status::unauthorized, core_->refused_unauthenticated,
                     "a member token is required (token=...)\n");
    }
    TokenCheck check =
        check_member_token(*given, core_->options.token_secret, std::chrono::system_clock::now());
    switch (check.verdict) {
      case TokenVerdict::ok:
        break;
      case TokenVerdict::expired:
        return refusal(version, http::status::unauthorized, core_->refused_expired,
                       "the member token has expired\n");
      case TokenVerdict::malformed:
      case TokenVerdict::bad_signature:
        return refusal(version, http::status::forbidden, core_->refused_bad_token,
                       "the member token is not valid\n");
    }
    return std::move(check.member);
  }

  // A refused upgrade's answer, counted; a 401 carries the Bearer challenge.
  static Response refusal(unsigned version, http::status status,
                          std::atomic<std::uint64_t>& counter, std::string body) {
    ++counter;
    Response res = text_response(status, std::move(body), version);
    if (status == http::status::unauthorized)
      res.set(http::field::www_authenticate, "Bearer realm=\"natsfleet\"");
    return res;
  }

  // Any other GET: an in-memory page, else a file under web_root.
  Answer serve_page(const Request& req) const {
    const unsigned version = req.version();
    const std::string_view path = net::request_path(req);
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

  net::HttpServer server_;  // before core_, which shares its io_context
  // Also held by every session; lives on after stop() for stats().
  const std::shared_ptr<GatewayCore> core_;

  std::mutex mu_;  // start() and stop() may race
  bool started_ = false;
  bool running_ = false;
};

Result<void> WebSocketGateway::Impl::start() {
  std::lock_guard lock(mu_);
  if (started_) return Result<void>(Errc::invalid_argument, "relay gateway already started");
  started_ = true;

  const GatewayOptions& options = core_->options;
  if (!options.web_root.empty()) {
    std::error_code ec;
    core_->web_root = fs::canonical(options.web_root, ec);
    if (ec || !fs::is_directory(core_->web_root, ec)) {
      return Result<void>(
          Errc::invalid_argument,
          fmt::format("relay gateway: web root {} is not a directory", options.web_root.string()));
    }
  }
  if (options.io_threads < 1 || options.max_queued_messages < 1 ||
      options.ping_interval.count() <= 0 || options.idle_timeout.count() <= 0) {
    return Result<void>(Errc::invalid_argument,
                        "relay gateway: io_threads, max_queued_messages, ping_interval and "
                        "idle_timeout must be positive");
  }
  if (auto started = server_.start(); !started) return started;
  running_ = true;
  core_->notifier.start();
  return {};
}

void WebSocketGateway::Impl::stop() {
  std::lock_guard lock(mu_);
  if (!running_) return;
  running_ = false;
  // Upgrades still being checked are refused; sessions still upgrading close at once.
  core_->stopping = true;
  // Sends every session a close frame (they are the server's taken-over connections) and waits
  // up to stop_timeout for the handshakes before cutting what is left.
  server_.stop();
  core_->notifier.stop();
}

GatewayStats WebSocketGateway::Impl::stats() const {
  const net::HttpServerStats http = server_.stats();
  GatewayStats s;
  s.sessions = core_->sessions;
  s.http_connections = http.connections;
  s.attached = core_->attached;
  s.refused_member = core_->refused_member;
  s.refused_full = core_->refused_full;
  s.refused_origin = core_->refused_origin;
  s.refused_unauthenticated = core_->refused_unauthenticated;
  s.refused_expired = core_->refused_expired;
  s.refused_bad_token = core_->refused_bad_token;
  s.refused_member_mismatch = core_->refused_member_mismatch;
  s.cut_idle = http.cut_idle;
  s.cut_slow = http.cut_slow;
  s.evicted = http.evicted;
  s.refused_busy = http.refused_busy;
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
