// A TCP link between a client and a broker node (or between two nodes) that the nemesis can
// break: pass bytes through, delay them, hold them (blackhole: the link goes silent both ways
// while the sockets stay open, as in a partition), or drop it (every connection reset, new ones
// closed at once).
//
//   TcpProxy link(node_port);                 // listens on 127.0.0.1:link.port()
//   link.set_mode(LinkMode::blackhole);       // partition; later set_mode(LinkMode::pass)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>

namespace natsfleet::chaos {

enum class LinkMode { pass, delay, blackhole, drop };

const char* link_mode_name(LinkMode mode);

class TcpProxy {
 public:
  // Listens on a free loopback port and forwards every connection to 127.0.0.1:`target_port`.
  // Throws std::runtime_error when no listening socket can be made.
  explicit TcpProxy(int target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  int target_port() const { return target_port_; }

  // Takes effect within one poll round (milliseconds). `delay` holds every chunk that long in
  // each direction.
  void set_mode(LinkMode mode, std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  LinkMode mode() const { return mode_.load(); }

  uint64_t connections_accepted() const { return accepted_.load(); }
  uint64_t bytes_forwarded() const { return forwarded_.load(); }

 private:
  void run();

  const int target_port_;
  int listen_fd_ = -1;
  int port_ = -1;
  int wake_[2] = {-1, -1};  // a pipe: set_mode and the destructor interrupt poll()
  std::atomic<LinkMode> mode_{LinkMode::pass};
  std::atomic<int64_t> delay_ms_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> forwarded_{0};
  std::thread thread_;
};

}  // namespace natsfleet::chaos
