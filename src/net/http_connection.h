// One connection of an HttpServer: read a request, answer it, repeat while the client keeps it
// alive, or hand the socket to a route that takes it over. Owned by the handlers of its pending
// operation (shared_from_this), so it lives exactly as long as it has something to wait for.
// Everything but the constructor runs on its strand (or from stop() once no io thread runs).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <cstdint>
#include <memory>
#include <optional>

#include "net/http_core.h"
#include "net/http_server.h"

namespace natsfleet::net {

class HttpConnection : public Connection, public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(boost::asio::ip::tcp::socket&& socket, std::shared_ptr<HttpCore> core);
  ~HttpConnection() override;

  // Serves the connection in the slot HttpCore::admit() gave it.
  void start();
  void close_gracefully() override;
  void abort() override;
  // Chosen by admit() to make room: its wait has ended, so it is cut however far it got.
  void cut_for_room();

 private:
  // Runs `f`; an exception it throws ends this connection (logged), never the server.
  template <typename F>
  void guarded(F&& f) noexcept;
  void read();
  // False when admit() ended the wait first; the slot is then no longer this connection's.
  bool end_waiting();
  void on_read(boost::beast::error_code ec);
  void hand_over(Takeover takeover, Request req);
  void write(Response res, bool close);
  // Closes the connection and gives up its slot. Idempotent; pending operations then complete
  // with errors and release the connection.
  void finish();

  const std::shared_ptr<HttpCore> core_;  // first: destroyed last, after the socket
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  Response res_;
  std::uint64_t id_ = 0;
  std::uint64_t wait_ticket_ = 0;  // while waiting for a request: its place in HttpCore's queue
  bool holds_slot_ = false;
  bool finished_ = false;
};

}  // namespace natsfleet::net
