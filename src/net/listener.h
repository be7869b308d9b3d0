// How net::HttpServer opens its listening socket and keeps its sockets from child processes:
// close-on-exec, address reuse, the failing step named.
#pragma once

#include <fcntl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <optional>

namespace natsfleet::net {

// Asio opens and accepts sockets without close-on-exec: a process the daemon spawns (a worker
// sink) would otherwise inherit them and keep the port bound after the server stops.
inline void close_on_exec(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

struct ListenFailure {
  const char* step;  // "open a socket for", "configure", "listen on"
  boost::system::error_code error;
};

// Opens `acceptor` at `endpoint` and listens; nothing on success.
inline std::optional<ListenFailure> listen_at(boost::asio::ip::tcp::acceptor& acceptor,
                                              const boost::asio::ip::tcp::endpoint& endpoint) {
  boost::system::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (ec) return ListenFailure{"open a socket for", ec};
  close_on_exec(acceptor.native_handle());
  // Lets a restarted process bind while old connections linger in TIME_WAIT; on Linux it does
  // not let two listeners share the port, so "in use" is still reported.
  acceptor.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (ec) return ListenFailure{"configure", ec};
  acceptor.bind(endpoint, ec);
  if (ec) return ListenFailure{"listen on", ec};
  acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) return ListenFailure{"listen on", ec};
  return std::nullopt;
}

}  // namespace natsfleet::net
