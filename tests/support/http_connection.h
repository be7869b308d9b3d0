// The tests' HTTP client for one kept connection: requests with a deadline, raw bytes, and
// watching whether the server closes it (header deadlines, eviction, slow clients). For one
// request on a fresh connection, http_client.h is simpler.
//
//   HttpConnection c(port);
//   EXPECT_EQ(c.get("/healthz").status, 200u);
//   c.send_raw("GET / HTTP/1.1\r\n");
//   EXPECT_TRUE(c.closed_by_server(std::chrono::seconds(5)));
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <stdexcept>
#include <string>

#include <poll.h>
#include <sys/socket.h>

namespace natsfleet::testing {

namespace http_connection_detail {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Generous bound for one exchange on loopback; only reached when something hangs.
inline constexpr std::chrono::milliseconds kHttpConnectionDeadline{5'000};

struct HttpConnectionReply {
  unsigned status = 0;
  std::string body;
  std::string content_type;
  std::string allow;
  bool keep_alive = false;
};

// One client connection, driven by its own io_context so every operation has a deadline.
class HttpConnection {
 public:
  explicit HttpConnection(int port) : stream_(ioc_) {
    stream_.expires_after(kHttpConnectionDeadline);
    stream_.connect(
        tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)));
  }

  HttpConnectionReply request(http::verb method, const std::string& target, unsigned version = 11) {
    http::request<http::string_body> req{method, target, version};
    req.set(http::field::host, "127.0.0.1");
    req.prepare_payload();
    beast::error_code ec;
    stream_.expires_after(kHttpConnectionDeadline);
    http::async_write(stream_, req, [&](beast::error_code e, std::size_t) { ec = e; });
    run();
    if (ec) throw std::runtime_error("write: " + ec.message());
    http::response<http::string_body> res;
    stream_.expires_after(kHttpConnectionDeadline);
    http::async_read(stream_, buffer_, res, [&](beast::error_code e, std::size_t) { ec = e; });
    run();
    if (ec) throw std::runtime_error("read: " + ec.message());
    return {res.result_int(), res.body(), std::string(res[http::field::content_type]),
            std::string(res[http::field::allow]), res.keep_alive()};
  }
  HttpConnectionReply get(const std::string& target) { return request(http::verb::get, target); }

  void send_raw(const std::string& bytes) {
    beast::error_code ec;
    stream_.expires_after(kHttpConnectionDeadline);
    asio::async_write(stream_, asio::buffer(bytes),
                      [&](beast::error_code e, std::size_t) { ec = e; });
    run();
    if (ec) throw std::runtime_error("write: " + ec.message());
  }

  // True when the server closes the connection (EOF or reset) within `within`; what it sent
  // before is kept in received().
  bool closed_by_server(std::chrono::milliseconds within) {
    stream_.expires_after(within);
    for (;;) {
      char chunk[512];
      beast::error_code ec;
      std::size_t n = 0;
      stream_.async_read_some(asio::buffer(chunk), [&](beast::error_code e, std::size_t got) {
        ec = e;
        n = got;
      });
      run();
      received_.append(chunk, n);
      if (ec) return ec == asio::error::eof || ec == asio::error::connection_reset;
    }
  }
  // True when the server has not closed the connection within `within`. Unlike a timed-out
  // closed_by_server(), this leaves the connection open for what the test does next.
  bool stays_open(std::chrono::milliseconds within) {
    pollfd p{stream_.socket().native_handle(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(within.count())) <= 0) return true;
    char byte = 0;
    return ::recv(p.fd, &byte, 1, MSG_PEEK) > 0;  // data, not an end of stream
  }
  // Reads until `text` has arrived (true) or `within` passes.
  bool receives(const std::string& text, std::chrono::milliseconds within) {
    const auto until = std::chrono::steady_clock::now() + within;
    while (received_.find(text) == std::string::npos) {
      if (std::chrono::steady_clock::now() >= until) return false;
      char chunk[512];
      beast::error_code ec;
      std::size_t n = 0;
      stream_.expires_at(until);
      stream_.async_read_some(asio::buffer(chunk), [&](beast::error_code e, std::size_t got) {
        ec = e;
        n = got;
      });
      run();
      received_.append(chunk, n);
      if (ec) return received_.find(text) != std::string::npos;
    }
    return true;
  }
  const std::string& received() const { return received_; }

 private:
  void run() {
    ioc_.restart();
    ioc_.run();
  }

  asio::io_context ioc_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::string received_;
};

}  // namespace http_connection_detail

using http_connection_detail::HttpConnection;
using http_connection_detail::HttpConnectionReply;
using http_connection_detail::kHttpConnectionDeadline;

}  // namespace natsfleet::testing
