#include "net/http_connection.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/log_event.h"

namespace natsfleet::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr std::size_t kHeaderLimit = std::size_t{8} * 1024;
constexpr std::size_t kBodyLimit = std::size_t{8} * 1024;  // no route takes a body

void log_error(const std::string& server, const std::string& what) {
  base::log_event(*spdlog::default_logger(), spdlog::level::err,
                  {{"event", "http-error"}, {"server", server}}, "{}: connection: {}", server,
                  what);
}

}  // namespace

template <typename F>
void HttpConnection::guarded(F&& f) noexcept {
  const std::string& server = core_->options.name;
  try {
    f();
    return;
  } catch (const std::exception& e) {
    log_error(server, e.what());
  } catch (...) {
    log_error(server, "unknown exception");
  }
  try {
    finish();
  } catch (const std::exception& e) {
    log_error(server, std::string("cannot close: ") + e.what());
  } catch (...) {
    log_error(server, "cannot close");
  }
}

HttpConnection::HttpConnection(tcp::socket&& socket, std::shared_ptr<HttpCore> core)
    : core_(std::move(core)), stream_(std::move(socket)) {}

HttpConnection::~HttpConnection() { finish(); }

void HttpConnection::start() {
  holds_slot_ = true;
  id_ = core_->track(weak_from_this());
  read();
}

void HttpConnection::close_gracefully() {
  asio::post(stream_.get_executor(),
             [self = shared_from_this()] { self->guarded([&] { self->finish(); }); });
}

void HttpConnection::abort() { finish(); }

void HttpConnection::cut_for_room() {
  asio::post(stream_.get_executor(),
             [self = shared_from_this()] { self->guarded([&] { self->finish(); }); });
}

void HttpConnection::read() {
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

bool HttpConnection::end_waiting() {
  if (wait_ticket_ == 0) return true;
  const bool mine = core_->end_waiting(wait_ticket_);
  wait_ticket_ = 0;
  if (!mine) holds_slot_ = false;
  return mine;
}

void HttpConnection::on_read(beast::error_code ec) {
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

void HttpConnection::hand_over(Takeover takeover, Request req) {
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

void HttpConnection::write(Response res, bool close) {
  res_ = std::move(res);
  if (close) res_.keep_alive(false);
  res_.prepare_payload();
  stream_.expires_after(core_->options.write_timeout);
  http::async_write(stream_, res_,
                    [self = shared_from_this(), close](beast::error_code ec, std::size_t) {
                      self->guarded([&] {
                        if (ec || close) {
                          if (!ec) self->stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
                          self->finish();
                          return;
                        }
                        self->read();
                      });
                    });
}

void HttpConnection::finish() {
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

}  // namespace natsfleet::net
