#include "relay/ws_session.h"

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

namespace natsfleet::relay {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using net::Request;

void AttachNotifier::set_hook(AttachHook hook) {
  std::lock_guard lock(mu_);
  hook_ = std::make_shared<AttachHook>(std::move(hook));
}

void AttachNotifier::start() {
  std::lock_guard lock(mu_);
  thread_ = std::thread([this] { run(); });
}

void AttachNotifier::notify(const std::string& member) {
  {
    std::lock_guard lock(mu_);
    if (stopped_ || !hook_ || !*hook_) return;
    pending_.push_back(member);
  }
  cv_.notify_one();
}

void AttachNotifier::stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    pending_.clear();
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void AttachNotifier::run() {
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
      base::log_event(*spdlog::default_logger(), spdlog::level::err,
                      {{"event", "relay-error"}, {"server", "relay"}},
                      "relay gateway: attach hook failed: {}", e.what());
    } catch (...) {
      base::log_event(*spdlog::default_logger(), spdlog::level::err,
                      {{"event", "relay-error"}, {"server", "relay"}},
                      "relay gateway: attach hook failed with an unknown exception");
    }
    lock.lock();
  }
}

namespace {

// No exception may leave an io handler: one that does ends its session (`finish`), never the
// gateway.
template <typename F, typename Finish>
void run_guarded(F&& f, Finish&& finish) noexcept {
  try {
    f();
    return;
  } catch (const std::exception& e) {
    base::log_event(*spdlog::default_logger(), spdlog::level::err,
                    {{"event", "relay-error"}, {"server", "relay"}}, "relay gateway: session: {}",
                    e.what());
  } catch (...) {
    base::log_event(*spdlog::default_logger(), spdlog::level::err,
                    {{"event", "relay-error"}, {"server", "relay"}},
                    "relay gateway: session: unknown exception");
  }
  try {
    finish();
  } catch (const std::exception& e) {
    base::log_event(*spdlog::default_logger(), spdlog::level::err,
                    {{"event", "relay-error"}, {"server", "relay"}},
                    "relay gateway: session: cannot close: {}", e.what());
  } catch (...) {
    base::log_event(*spdlog::default_logger(), spdlog::level::err,
                    {{"event", "relay-error"}, {"server", "relay"}},
                    "relay gateway: session: cannot close");
  }
}

// One attached browser. Its socket lives on a strand; deliver() may come from any thread and only
// touches the outbound queue (under out_mu_) and posts to the strand.
class WsSession : public net::Connection,
                  public RelaySession,
                  public std::enable_shared_from_this<WsSession> {
 public:
  WsSession(tcp::socket&& socket, std::shared_ptr<GatewayCore> core, std::string member)
      : core_(std::move(core)),
        ws_(std::move(socket)),
        timer_(ws_.get_executor()),
        member_(std::move(member)) {}

  ~WsSession() override {
    if (holds_slot_) --core_->sessions;
  }

  // Completes the upgrade the HTTP connection read.
  void accept(Request req) {
    upgrade_ = std::move(req);
    accepting_ = true;
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
      asio::post(ws_.get_executor(),
                 [self = shared_from_this()] { self->guarded([&] { self->finish(); }); });
      return false;
    }
    queued_bytes_ += payload->size();
    queue_.push_back(std::move(payload));
    if (!write_scheduled_) {
      write_scheduled_ = true;
      asio::post(ws_.get_executor(),
                 [self = shared_from_this()] { self->guarded([&] { self->write_next(); }); });
    }
    return true;
  }

  bool closed() const override {
    std::lock_guard lock(out_mu_);
    return closed_;
  }

  void close_gracefully() override {
    asio::post(ws_.get_executor(), [self = shared_from_this()] {
      self->guarded([&] { self->start_close(websocket::close_code::going_away); });
    });
  }

  void abort() override { finish(); }

 private:
  template <typename F>
  void guarded(F&& f) noexcept {
    run_guarded(std::forward<F>(f), [this] { finish(); });
  }

  void on_accept(beast::error_code ec) {
    upgrade_ = {};
    accepting_ = false;
    if (ec) {
      finish();
      return;
    }
    // The browser has its 101 already: a gateway stopping meanwhile says goodbye to it as to
    // any other session, rather than cutting the connection.
    if (core_->stopping || close_on_accept_) {
      say_goodbye(close_on_accept_ ? close_code_ : websocket::close_code::going_away);
      return;
    }
    registry_id_ = core_->registry.add(member_, shared_from_this());
    registered_ = true;
    ++core_->attached;  // after the registry lists it: a counted session gets what follows
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
    ws_.async_write(asio::buffer(*current_),
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
    if (!registered_) {
      // The handshake's answer may be on its way to the browser: say goodbye once it is done.
      if (accepting_) {
        close_on_accept_ = true;
        close_code_ = code;
        return;
      }
      finish();  // not upgrading yet: nothing to say goodbye to
      return;
    }
    say_goodbye(code);
  }

  void say_goodbye(websocket::close_code code) {
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
    if (holds_slot_) {
      holds_slot_ = false;
      --core_->sessions;
    }
    beast::get_lowest_layer(ws_).close();
  }

  const std::shared_ptr<GatewayCore> core_;  // first: destroyed last, after the socket
  websocket::stream<beast::tcp_stream> ws_;
  asio::steady_timer timer_;
  const std::string member_;
  Request upgrade_;
  beast::flat_buffer buffer_;

  // Strand-only state.
  std::shared_ptr<const std::string> current_;  // the status being written
  Clock::time_point last_heard_{};
  Clock::time_point last_ping_{};
  SessionId registry_id_ = 0;
  bool registered_ = false;
  bool accepting_ = false;        // the upgrade's handshake is under way
  bool close_on_accept_ = false;  // start_close() came during the handshake
  websocket::close_code close_code_ = websocket::close_code::going_away;
  bool holds_slot_ = true;  // the upgrade route reserved it for this session
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

}  // namespace

std::shared_ptr<net::Connection> start_ws_session(tcp::socket socket,
                                                  std::shared_ptr<GatewayCore> core,
                                                  std::string member, Request upgrade) {
  auto session = std::make_shared<WsSession>(std::move(socket), std::move(core), std::move(member));
  session->accept(std::move(upgrade));
  return session;
}

}  // namespace natsfleet::relay
