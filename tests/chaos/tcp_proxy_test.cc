// The nemesis's TCP link: passes bytes, holds them while blackholed and lets them through after,
// delays them, and resets connections when dropped.
#include "chaos/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace natsfleet::chaos {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// An echo server on a loopback port, one connection at a time.
class Echo {
 public:
  Echo() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    socklen_t n = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &n);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        char buf[4096];
        for (ssize_t r; (r = ::read(c, buf, sizeof buf)) > 0;) {
          if (::write(c, buf, static_cast<size_t>(r)) != r) break;
        }
        ::close(c);
      }
    });
  }
  ~Echo() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

int dial(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// What arrives on `fd` within `timeout`: the bytes, or "" on silence; "<closed>" on EOF/reset.
std::string receive(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return "";
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n <= 0) return "<closed>";
  return std::string(buf, static_cast<size_t>(n));
}

TEST(TcpProxy, PassesBytesBothWays) {
  Echo echo;
  TcpProxy proxy(echo.port());
  const int fd = dial(proxy.port());
  ASSERT_EQ(::write(fd, "ping", 4), 4);
  EXPECT_EQ(receive(fd, 5s), "ping");
  ::close(fd);
}

TEST(TcpProxy, BlackholeHoldsBytesUntilHealed) {
  Echo echo;
  TcpProxy proxy(echo.port());
  const int fd = dial(proxy.port());
  ASSERT_EQ(::write(fd, "a", 1), 1);
  ASSERT_EQ(receive(fd, 5s), "a");
  proxy.set_mode(LinkMode::blackhole);
  ASSERT_EQ(::write(fd, "b", 1), 1);
  EXPECT_EQ(receive(fd, 300ms), "") << "a blackholed link must stay silent";
  proxy.set_mode(LinkMode::pass);
  EXPECT_EQ(receive(fd, 5s), "b") << "held bytes go through once the link heals";
  ::close(fd);
}

TEST(TcpProxy, DelayHoldsEachChunk) {
  Echo echo;
  TcpProxy proxy(echo.port());
  proxy.set_mode(LinkMode::delay, 150ms);
  const int fd = dial(proxy.port());
  const auto sent = Clock::now();
  ASSERT_EQ(::write(fd, "d", 1), 1);
  ASSERT_EQ(receive(fd, 5s), "d");
  // Delayed once on the way out and once on the way back.
  EXPECT_GE(Clock::now() - sent, 300ms);
  ::close(fd);
}

TEST(TcpProxy, DropResetsOpenConnectionsAndRefusesNewOnes) {
  Echo echo;
  TcpProxy proxy(echo.port());
  const int fd = dial(proxy.port());
  ASSERT_EQ(::write(fd, "x", 1), 1);
  ASSERT_EQ(receive(fd, 5s), "x");
  proxy.set_mode(LinkMode::drop);
  EXPECT_EQ(receive(fd, 5s), "<closed>");
  ::close(fd);
  const int again = dial(proxy.port());
  EXPECT_EQ(receive(again, 5s), "<closed>");
  ::close(again);
}

}  // namespace
}  // namespace natsfleet::chaos
