// What an HttpServer's connections share with it: the routes (written before start(), then only
// read), the bounded set of connection slots with the queue of connections waiting for a request,
// and the list of everything stop() closes. Every connection holds it, so one that outlives
// stop() (a taken-over connection another thread still holds) still has its io_context.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/beast/http/verb.hpp>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "net/http_server.h"

namespace natsfleet::net {

class HttpConnection;

class HttpCore {
 public:
  explicit HttpCore(HttpServerOptions o);

  const HttpServerOptions options;
  boost::asio::io_context ioc;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> cut_idle{0};
  std::atomic<std::uint64_t> cut_slow{0};
  std::atomic<std::uint64_t> evicted{0};
  std::atomic<std::uint64_t> refused_busy{0};

  // Before start() only: io threads then read the routes without a lock.
  void add_route(std::optional<boost::beast::http::verb> method, std::string path, Handler handler);
  void add_fallback(boost::beast::http::verb method, Handler handler);

  // The route's answer (HttpServer::route says which); a route that throws is answered 500.
  Answer answer(const Request& req);

  // Makes room for a new connection. False when every slot is taken by a connection busy
  // answering. Otherwise the new connection holds a slot: a free one, or the one of the connection
  // that has waited longest for its request, which is then `victim` and must be cut.
  bool admit(std::shared_ptr<HttpConnection>& victim);
  void release_slot();
  std::size_t open_connections() const;

  // Connections waiting for a request, oldest wait first: the ones to cut when a new connection
  // needs room. end_waiting() is false when admit() ended the wait first.
  std::uint64_t begin_waiting(std::weak_ptr<HttpConnection> connection);
  bool end_waiting(std::uint64_t ticket);

  // Everything stop() closes: open connections and the ones routes took over.
  std::uint64_t track(std::weak_ptr<Connection> connection);
  void untrack(std::uint64_t id);
  std::vector<std::shared_ptr<Connection>> live_connections() const;

 private:
  struct PathRoutes {
    std::map<boost::beast::http::verb, Handler> by_method;
    Handler any_method;
  };

  Answer dispatch(const Request& req) const;

  std::map<std::string, PathRoutes, std::less<>> routes_;
  std::map<boost::beast::http::verb, Handler> fallbacks_;
  std::set<boost::beast::http::verb> served_;  // methods some route or fallback takes

  mutable std::mutex mu_;
  std::size_t open_ = 0;  // connections holding a slot
  std::map<std::uint64_t, std::weak_ptr<HttpConnection>> waiting_;
  std::uint64_t next_ticket_ = 1;
  std::unordered_map<std::uint64_t, std::weak_ptr<Connection>> tracked_;
  std::uint64_t next_id_ = 1;
  std::size_t prune_at_;
};

}  // namespace natsfleet::net
