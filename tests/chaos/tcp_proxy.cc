#include "chaos/tcp_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <list>
#include <stdexcept>
#include <string>
#include <vector>

namespace natsfleet::chaos {
namespace {

using Clock = std::chrono::steady_clock;

// Per direction: past this much held data the proxy stops reading, so a blackholed or delayed
// link pushes back on its sender through TCP as a real slow network does.
constexpr size_t kMaxHeldBytes = 1 << 20;

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Closing with linger 0 sends a reset: the peer learns at once that the link is gone.
void reset_close(int fd) {
  if (fd < 0) return;
  linger hard{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  ::close(fd);
}

struct Chunk {
  Clock::time_point release;
  std::string bytes;
  size_t sent = 0;
};

struct Direction {
  std::deque<Chunk> held;
  size_t held_bytes = 0;
  bool eof = false;   // the sender closed its side
  bool shut = false;  // ... and that close was passed on
};

struct Link {
  int client = -1;
  int server = -1;
  bool connecting = true;
  Direction up;    // client -> server
  Direction down;  // server -> client
  bool dead = false;
};

// Moves what `from` has into `dir`; false when the link broke.
bool read_into(int from, Direction& dir, Clock::time_point release) {
  char buffer[65536];
  const ssize_t n = ::read(from, buffer, sizeof buffer);
  if (n > 0) {
    dir.held.push_back(Chunk{release, std::string(buffer, static_cast<size_t>(n))});
    dir.held_bytes += static_cast<size_t>(n);
    return true;
  }
  if (n == 0) {
    dir.eof = true;
    return true;
  }
  return errno == EAGAIN || errno == EINTR;
}

// Writes the chunks whose time has come; false when the link broke.
bool write_from(int to, Direction& dir, Clock::time_point now, std::atomic<uint64_t>& counter) {
  while (!dir.held.empty() && dir.held.front().release <= now) {
    Chunk& chunk = dir.held.front();
    const ssize_t n =
        ::send(to, chunk.bytes.data() + chunk.sent, chunk.bytes.size() - chunk.sent, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    chunk.sent += static_cast<size_t>(n);
    dir.held_bytes -= static_cast<size_t>(n);
    counter += static_cast<uint64_t>(n);
    if (chunk.sent < chunk.bytes.size()) return true;  // the socket is full
    dir.held.pop_front();
  }
  if (dir.eof && dir.held.empty() && !dir.shut) {
    ::shutdown(to, SHUT_WR);
    dir.shut = true;
  }
  return true;
}

bool ready_to_write(const Direction& dir, Clock::time_point now) {
  return !dir.held.empty() && dir.held.front().release <= now;
}

}  // namespace

const char* link_mode_name(LinkMode mode) {
  switch (mode) {
    case LinkMode::pass:
      return "pass";
    case LinkMode::delay:
      return "delay";
    case LinkMode::blackhole:
      return "blackhole";
    case LinkMode::drop:
      return "drop";
  }
  return "?";
}

TcpProxy::TcpProxy(int target_port) : target_port_(target_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error(std::string("proxy socket: ") + strerror(errno));
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listen_fd_, 128) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error(std::string("proxy listen: ") + strerror(errno));
  }
  socklen_t length = sizeof address;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
  set_nonblocking(listen_fd_);
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error(std::string("proxy pipe: ") + strerror(errno));
  }
  thread_ = std::thread([this] { run(); });
}

TcpProxy::~TcpProxy() {
  stopping_ = true;
  const char byte = 0;
  [[maybe_unused]] auto ignored = ::write(wake_[1], &byte, 1);
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void TcpProxy::set_mode(LinkMode mode, std::chrono::milliseconds delay) {
  delay_ms_ = delay.count();
  mode_ = mode;
  const char byte = 0;
  [[maybe_unused]] auto ignored = ::write(wake_[1], &byte, 1);
}

void TcpProxy::run() {
  std::list<Link> links;
  auto close_link = [](Link& link) {
    reset_close(link.client);
    reset_close(link.server);
    link.client = link.server = -1;
    link.dead = true;
  };

  while (!stopping_) {
    const LinkMode mode = mode_.load();
    const auto now = Clock::now();
    if (mode == LinkMode::drop) {
      for (auto& link : links) close_link(link);
    }
    links.remove_if([](const Link& link) { return link.dead; });

    // Poll set: wake pipe, listener, then two entries per link (client, server).
    std::vector<pollfd> fds;
    fds.push_back({wake_[0], POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    int timeout_ms = 1000;
    const bool frozen = mode == LinkMode::blackhole;
    for (auto& link : links) {
      short client_events = 0, server_events = 0;
      if (link.connecting) {
        server_events = POLLOUT;
      } else if (!frozen) {
        if (!link.up.eof && link.up.held_bytes < kMaxHeldBytes) client_events |= POLLIN;
        if (!link.down.eof && link.down.held_bytes < kMaxHeldBytes) server_events |= POLLIN;
        if (ready_to_write(link.up, now)) server_events |= POLLOUT;
        if (ready_to_write(link.down, now)) client_events |= POLLOUT;
        for (const Direction* dir : {&link.up, &link.down}) {
          if (!dir->held.empty() && dir->held.front().release > now) {
            const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  dir->held.front().release - now)
                                  .count() +
                              1;
            timeout_ms = std::min(timeout_ms, static_cast<int>(wait));
          }
        }
      }
      // A frozen link is left out of the poll set altogether: even a hang-up must wait.
      const bool skip = frozen && !link.connecting;
      fds.push_back({skip ? -1 : link.client, client_events, 0});
      fds.push_back({skip ? -1 : link.server, server_events, 0});
    }

    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) {
      char drain[64];
      while (::read(wake_[0], drain, sizeof drain) > 0) {
      }
    }
    if (stopping_) break;

    const auto after = Clock::now();
    const auto release =
        after + std::chrono::milliseconds(mode_.load() == LinkMode::delay ? delay_ms_.load() : 0);
    size_t slot = 2;
    for (auto& link : links) {
      const short client_revents = fds[slot].revents;
      const short server_revents = fds[slot + 1].revents;
      slot += 2;
      if (link.connecting) {
        if (server_revents == 0) continue;
        int error = 0;
        socklen_t length = sizeof error;
        ::getsockopt(link.server, SOL_SOCKET, SO_ERROR, &error, &length);
        if (error != 0) {
          close_link(link);  // the node is down: the client sees its connection closed
          continue;
        }
        link.connecting = false;
        continue;
      }
      bool ok = true;
      if (client_revents & (POLLERR | POLLNVAL)) ok = false;
      if (server_revents & (POLLERR | POLLNVAL)) ok = false;
      if (ok && !link.up.eof && (client_revents & (POLLIN | POLLHUP)))
        ok = read_into(link.client, link.up, release);
      if (ok && !link.down.eof && (server_revents & (POLLIN | POLLHUP)))
        ok = read_into(link.server, link.down, release);
      if (ok && mode_.load() != LinkMode::blackhole) {
        ok = write_from(link.server, link.up, after, forwarded_) &&
             write_from(link.client, link.down, after, forwarded_);
      }
      if (!ok || (link.up.shut && link.down.shut)) close_link(link);
    }

    if (fds[1].revents & POLLIN) {
      for (;;) {
        const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (client < 0) break;
        ++accepted_;
        if (mode_.load() == LinkMode::drop) {
          reset_close(client);
          continue;
        }
        const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int one = 1;
        ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sockaddr_in target{};
        target.sin_family = AF_INET;
        target.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        target.sin_port = htons(static_cast<uint16_t>(target_port_));
        const int rc = ::connect(server, reinterpret_cast<sockaddr*>(&target), sizeof target);
        if (rc != 0 && errno != EINPROGRESS) {
          reset_close(client);
          ::close(server);
          continue;
        }
        Link link;
        link.client = client;
        link.server = server;
        link.connecting = rc != 0;
        links.push_back(std::move(link));
      }
    }
  }
  for (auto& link : links) close_link(link);
}

}  // namespace natsfleet::chaos
