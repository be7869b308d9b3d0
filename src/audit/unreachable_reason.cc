#include "audit/unreachable_reason.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "base/duration.h"
#include "base/endpoint.h"
#include "base/file_descriptor.h"

namespace natsfleet::audit {
namespace {

constexpr int kNatsPort = 4222;

// "" when a TCP connection to `address` opens within `timeout`, else why not.
std::string tcp_connect(const addrinfo& address, std::chrono::milliseconds timeout) {
  const base::FileDescriptor socket(::socket(
      address.ai_family, address.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, address.ai_protocol));
  const int fd = socket.get();
  if (fd < 0) return std::strerror(errno);
  if (::connect(fd, address.ai_addr, address.ai_addrlen) == 0) return {};
  if (errno != EINPROGRESS) return std::strerror(errno);
  pollfd wait{fd, POLLOUT, 0};
  const int ready = ::poll(&wait, 1, static_cast<int>(timeout.count()));
  if (ready == 0) return "no answer within " + base::format_duration(timeout);
  if (ready < 0) return std::strerror(errno);
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return std::strerror(errno);
  return error == 0 ? std::string() : std::strerror(error);
}

}  // namespace

std::string unreachable_reason(const std::string& server, std::chrono::milliseconds timeout) {
  const auto url = base::parse_url(server);
  if (!url) return "not a URL";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(url->port.value_or(kNatsPort));
  if (const int rc = ::getaddrinfo(url->host.c_str(), port.c_str(), &hints, &found); rc != 0)
    return "cannot resolve " + url->host + ": " + ::gai_strerror(rc);
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
  std::string why = "no address for " + url->host;
  for (const addrinfo* a = found; a; a = a->ai_next) {
    why = tcp_connect(*a, timeout);
    if (why.empty())
      return "the port accepts connections but the NATS handshake did not complete: a paused "
             "broker, not a NATS port, or TLS or credentials refused";
  }
  return why;
}

}  // namespace natsfleet::audit
