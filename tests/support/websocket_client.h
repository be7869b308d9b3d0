// A WebSocket client standing in for a browser, for tests of the relay's gateway and the
// websocket sink. Header-only, like http_connection.h: it needs Boost.Beast, which only the
// tests that speak WebSocket link.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace natsfleet::testing {
// Generous bound for the connect and the upgrade on loopback; only reached when something hangs.
inline constexpr std::chrono::seconds kExchangeDeadline{5};

// A browser stand-in: upgrades on construction (status() is 101 on success, else the HTTP status
// of the refusal); after start_reading() a thread of its own reads every frame, answering the
// server's pings as a browser does. A client that never calls start_reading() is silent and
// takes nothing off its socket.
class WsClient {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;

  WsClient(int port, const std::string& target, bool small_receive_buffer = false,
           Headers headers = {})
      : ws_(ioc_) {
    ws_.set_option(boost::beast::websocket::stream_base::decorator(
        [headers](boost::beast::websocket::request_type& req) {
          for (const auto& [name, value] : headers) req.set(name, value);
        }));
    auto& stream = boost::beast::get_lowest_layer(ws_);
    const boost::asio::ip::tcp::endpoint server(boost::asio::ip::make_address("127.0.0.1"),
                                                static_cast<uint16_t>(port));
    if (small_receive_buffer) {
      // Fills up after a few frames, so a silent client backs up the server quickly.
      stream.socket().open(boost::asio::ip::tcp::v4());
      stream.socket().set_option(boost::asio::socket_base::receive_buffer_size(4096));
    }
    boost::beast::error_code ec;
    stream.expires_after(kExchangeDeadline);
    stream.async_connect(server, [&](boost::beast::error_code e) { ec = e; });
    run();
    if (ec) throw std::runtime_error("connect: " + ec.message());
    boost::beast::websocket::response_type res;
    stream.expires_after(kExchangeDeadline);
    ws_.async_handshake(res, "127.0.0.1", target, [&](boost::beast::error_code e) { ec = e; });
    run();
    status_ = res.result_int();
    stream.expires_never();
    if (ec && ec != boost::beast::websocket::error::upgrade_declined) {
      throw std::runtime_error("handshake: " + ec.message());
    }
  }

  ~WsClient() {
    ioc_.stop();
    if (reader_.joinable()) reader_.join();
  }

  unsigned status() const { return status_; }

  void start_reading() {
    // Restarted here, not on the reader thread, so the destructor's stop() cannot be undone.
    ioc_.restart();
    read_next();
    reader_ = std::thread([this] { ioc_.run(); });
  }

  // Starts a clean close from the client's side (needs start_reading()).
  void close() {
    boost::asio::post(ioc_, [this] {
      ws_.async_close(boost::beast::websocket::close_code::normal, [](auto) {});
    });
  }

  std::vector<std::string> messages() const {
    std::lock_guard lock(mu_);
    return messages_;
  }
  std::size_t count() const {
    std::lock_guard lock(mu_);
    return messages_.size();
  }
  bool closed() const {
    std::lock_guard lock(mu_);
    return closed_;
  }
  boost::beast::websocket::close_reason close_reason() const {
    std::lock_guard lock(mu_);
    return reason_;
  }

 private:
  void run() {
    ioc_.restart();
    ioc_.run();
  }

  void read_next() {
    ws_.async_read(buffer_, [this](boost::beast::error_code ec, std::size_t) {
      std::lock_guard lock(mu_);
      if (ec) {
        closed_ = true;
        reason_ = ws_.reason();
        return;
      }
      messages_.push_back(boost::beast::buffers_to_string(buffer_.data()));
      buffer_.consume(buffer_.size());
      read_next();
    });
  }

  boost::asio::io_context ioc_;
  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  boost::beast::flat_buffer buffer_;
  unsigned status_ = 0;
  std::thread reader_;
  mutable std::mutex mu_;
  std::vector<std::string> messages_;
  bool closed_ = false;
  boost::beast::websocket::close_reason reason_;
};

// A browser attached to a gateway's /ws?<query> and reading; throws when the upgrade is refused.
inline std::unique_ptr<WsClient> attach_browser(int port, const std::string& query) {
  auto client = std::make_unique<WsClient>(port, "/ws?" + query);
  if (client->status() != 101)
    throw std::runtime_error("upgrade of /ws?" + query + " refused: HTTP " +
                             std::to_string(client->status()));
  client->start_reading();
  return client;
}

}  // namespace natsfleet::testing
