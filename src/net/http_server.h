// The one HTTP/1.1 server behind natsfleet's endpoints (the health endpoints, the relay's
// gateway): listener and accept loop, a bounded set of connections, a header deadline against idle
// and slow-loris clients, and routes from method and path to a handler. A route may take the
// connection over instead of answering it: that is how the gateway upgrades to WebSocket.
//
//   net::HttpServer server({.name = "health server", .host = "127.0.0.1", .port = 9464});
//   server.route(http::verb::get, "/healthz", [](const net::Request& req) -> net::Answer {
//     return net::text_response(http::status::ok, "ok\n", req.version());
//   });
//   if (auto started = server.start(); !started) die(started.error().describe());
//   ...
//   server.stop();
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "natsfleet/error.h"

namespace natsfleet::net {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

// A plain-text answer no cache keeps: what probes and every refusal look like.
Response text_response(boost::beast::http::status status, std::string body, unsigned version);

// The request's path: its target without the query string.
std::string_view request_path(const Request& req);
// The request's query string (after '?'), empty when there is none.
std::string_view request_query(const Request& req);

// A connection a route took over (a WebSocket session). The server still closes it on stop(),
// with its own connections.
class Connection {
 public:
  virtual ~Connection() = default;
  // From stop() while the io threads still run: begin a clean close on the connection's strand.
  virtual void close_gracefully() = 0;
  // From stop() once no io thread runs, for what did not close within stop_timeout: close now.
  virtual void abort() = 0;
};

// Takes a connection over: its socket (no deadline set; its executor is a strand of the server's
// io_context, see HttpServer::io_context()) and the request read from it, on that strand. Returns
// the connection to close on stop(), which the server watches until it is destroyed (or nullptr).
using Takeover =
    std::function<std::shared_ptr<Connection>(boost::asio::ip::tcp::socket socket, Request req)>;

// What a route makes of a request: an answer (written, then the next request is read unless
// either side asked to close), or a takeover of the connection.
using Answer = std::variant<Response, Takeover>;

// Runs on an io thread, so it must be quick. An exception becomes a 500 answer.
using Handler = std::function<Answer(const Request&)>;

struct HttpServerOptions {
  std::string name = "http server";  // in logs and errors, e.g. "health server"
  std::string host = "127.0.0.1";    // an IP literal or a name to resolve
  uint16_t port = 0;                 // 0: the system picks a free port, see port()
  // From a connection's accept (or its previous answer) to the end of its request. A connection
  // still silent or trickling bytes then is cut unanswered (counted idle or slow): a client that
  // means it sends its request at once, so such clients cannot hold connections others need.
  std::chrono::milliseconds header_timeout = std::chrono::seconds(5);
  // A client that does not take an answer within this long is cut.
  std::chrono::milliseconds write_timeout = std::chrono::seconds(10);
  // Open connections at most (taken-over ones not counted), so a connection storm cannot exhaust
  // descriptors. At the limit a new connection makes room by cutting the one that has waited
  // longest for its request (evicted); only when every one is busy answering is it closed.
  std::size_t max_connections = 128;
  // How long stop() lets connections close cleanly (taken-over ones finish their goodbyes)
  // before cutting them. Zero: cut at once.
  std::chrono::milliseconds stop_timeout{0};
  int io_threads = 1;
};

struct HttpServerStats {
  std::size_t connections = 0;     // open now (taken-over ones not included)
  std::uint64_t cut_idle = 0;      // nothing received within the header deadline
  std::uint64_t cut_slow = 0;      // request still incomplete at the header deadline
  std::uint64_t evicted = 0;       // waited longest for a request when a new connection needed room
  std::uint64_t refused_busy = 0;  // closed on accept: every connection busy answering
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  // Stops when still running.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes are added before start(). A request goes to the route for its path and method; a
  // method that no route or fallback takes is answered 405 whatever the path (Allow lists the
  // methods that are taken); a path with routes but not for this method is 405 too (Allow: its
  // methods); any other request goes to the fallback for its method, or is answered 404.
  void route(boost::beast::http::verb method, std::string path, Handler handler);
  // Every request to `path`, whatever its method (an upgrade route answers the others itself).
  void route_any_method(std::string path, Handler handler);
  // Requests with `method` to a path no route has (e.g. static files).
  void fallback(boost::beast::http::verb method, Handler handler);

  // Binds, listens and serves on io_threads threads of its own. Fails naming the server and the
  // address when it cannot be resolved or is in use (the error code is then the system's, e.g.
  // std::errc::address_in_use). Call once.
  [[nodiscard]] Result<void> start();

  // Stops accepting, asks every connection to close and waits up to stop_timeout for them, then
  // cuts the rest and joins the threads. Idempotent; safe when start() failed or never ran.
  void stop();

  // The bound port once start() succeeded, else 0.
  int port() const;

  HttpServerStats stats() const;

  // The io_context the connections run on. Whoever keeps a taken-over connection after the
  // server is gone keeps this too, so that connection can still close its socket.
  std::shared_ptr<boost::asio::io_context> io_context() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace natsfleet::net
