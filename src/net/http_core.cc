#include "net/http_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "base/log_event.h"

namespace natsfleet::net {
namespace {

namespace http = boost::beast::http;

// Taken-over connections are never untracked, only seen expired: swept when the list reaches
// this size, then twice the live count.
constexpr std::size_t kMinTrackedPrune = 64;

Response method_not_allowed(const std::set<http::verb>& allowed, unsigned version) {
  Response res = text_response(http::status::method_not_allowed, "method not allowed\n", version);
  std::string allow;
  for (const http::verb method : allowed) {
    if (!allow.empty()) allow += ", ";
    allow += std::string(http::to_string(method));
  }
  res.set(http::field::allow, allow);
  return res;
}

}  // namespace

HttpCore::HttpCore(HttpServerOptions o)
    : options(std::move(o)), ioc(std::max(1, options.io_threads)), prune_at_(kMinTrackedPrune) {}

void HttpCore::add_route(std::optional<http::verb> method, std::string path, Handler handler) {
  PathRoutes& routes = routes_[std::move(path)];
  if (!method) {
    routes.any_method = std::move(handler);
    return;
  }
  routes.by_method[*method] = std::move(handler);
  served_.insert(*method);
}

void HttpCore::add_fallback(http::verb method, Handler handler) {
  fallbacks_[method] = std::move(handler);
  served_.insert(method);
}

Answer HttpCore::answer(const Request& req) {
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
                    "{}: {} {}: unknown exception", options.name, std::string(req.method_string()),
                    std::string(req.target()));
    return text_response(http::status::internal_server_error, "internal error\n", req.version());
  }
}

Answer HttpCore::dispatch(const Request& req) const {
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

bool HttpCore::admit(std::shared_ptr<HttpConnection>& victim) {
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

void HttpCore::release_slot() {
  std::lock_guard lock(mu_);
  --open_;
}

std::size_t HttpCore::open_connections() const {
  std::lock_guard lock(mu_);
  return open_;
}

std::uint64_t HttpCore::begin_waiting(std::weak_ptr<HttpConnection> connection) {
  std::lock_guard lock(mu_);
  const std::uint64_t ticket = next_ticket_++;
  waiting_.emplace(ticket, std::move(connection));
  return ticket;
}

bool HttpCore::end_waiting(std::uint64_t ticket) {
  std::lock_guard lock(mu_);
  return waiting_.erase(ticket) == 1;
}

std::uint64_t HttpCore::track(std::weak_ptr<Connection> connection) {
  std::lock_guard lock(mu_);
  if (tracked_.size() >= prune_at_) {
    std::erase_if(tracked_, [](const auto& entry) { return entry.second.expired(); });
    prune_at_ = std::max(kMinTrackedPrune, 2 * tracked_.size());
  }
  const std::uint64_t id = next_id_++;
  tracked_.emplace(id, std::move(connection));
  return id;
}

void HttpCore::untrack(std::uint64_t id) {
  std::lock_guard lock(mu_);
  tracked_.erase(id);
}

std::vector<std::shared_ptr<Connection>> HttpCore::live_connections() const {
  std::vector<std::shared_ptr<Connection>> live;
  std::lock_guard lock(mu_);
  live.reserve(tracked_.size());
  for (const auto& [id, weak] : tracked_) {
    if (auto c = weak.lock()) live.push_back(std::move(c));
  }
  return live;
}

}  // namespace natsfleet::net
