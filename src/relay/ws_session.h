// One attached browser's WebSocket session, and what the sessions share with the gateway.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "net/http_server.h"
#include "relay/session_registry.h"
#include "relay/websocket_gateway.h"

namespace natsfleet::relay {

// Runs the attach hook on a thread of its own, so a hook that talks to the broker never holds up
// an io thread.
class AttachNotifier {
 public:
  void set_hook(AttachHook hook);
  void start();
  void notify(const std::string& member);
  // Lets a running hook finish; hooks still queued are not run.
  void stop();

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<AttachHook> hook_;
  std::deque<std::string> pending_;
  bool stopped_ = false;
  std::thread thread_;
};

// What sessions share with the gateway. Every session holds it, so a session that a concurrent
// registry delivery keeps alive after stop() still has its io_context.
struct GatewayCore {
  GatewayCore(GatewayOptions o, SessionRegistry& r, std::shared_ptr<boost::asio::io_context> i)
      : io(std::move(i)), options(std::move(o)), registry(r) {}

  const std::shared_ptr<boost::asio::io_context>
      io;  // the HTTP server's, which the sessions' sockets use
  const GatewayOptions options;
  SessionRegistry& registry;
  std::filesystem::path web_root;  // canonical; empty: no files
  AttachNotifier notifier;
  std::atomic<bool> stopping{false};

  std::atomic<std::size_t> sessions{0};  // reserved at upgrade, released when the session ends
  std::atomic<std::uint64_t> attached{0};
  std::atomic<std::uint64_t> refused_member{0};
  std::atomic<std::uint64_t> refused_full{0};
  std::atomic<std::uint64_t> refused_origin{0};
  std::atomic<std::uint64_t> refused_unauthenticated{0};
  std::atomic<std::uint64_t> refused_expired{0};
  std::atomic<std::uint64_t> refused_bad_token{0};
  std::atomic<std::uint64_t> refused_member_mismatch{0};
  std::atomic<std::uint64_t> dropped_slow{0};
  std::atomic<std::uint64_t> closed_idle{0};
  std::atomic<std::uint64_t> frames_sent{0};

  // Reserves a session slot; false when max_sessions are taken.
  bool reserve_session() {
    std::size_t now = sessions.load();
    do {
      if (now >= options.max_sessions) return false;
    } while (!sessions.compare_exchange_weak(now, now + 1));
    return true;
  }
};

// Takes over an upgraded connection: completes the handshake of `upgrade` and, once the browser
// has its 101, registers the session for `member`. The HTTP server holds what it returns.
std::shared_ptr<net::Connection> start_ws_session(boost::asio::ip::tcp::socket socket,
                                                  std::shared_ptr<GatewayCore> core,
                                                  std::string member, net::Request upgrade);

}  // namespace natsfleet::relay
