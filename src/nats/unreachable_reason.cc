#include "nats/unreachable_reason.h"

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

#include <nlohmann/json.hpp>

namespace natsfleet::nats {
namespace {

constexpr int kNatsPort = 4222;

// "" when a TCP connection to `address` opens within `timeout` (left open in `socket`), else why
// not.
std::string tcp_connect(const addrinfo& address, std::chrono::milliseconds timeout,
                        base::FileDescriptor& socket) {
  socket = base::FileDescriptor(::socket(
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

// What the server's greeting (its INFO line, sent first on every connection) says of why a
// client's handshake fails; without one, a paused broker or another service.
std::string greeting(int fd, std::chrono::milliseconds timeout) {
  const std::string silent =
      "the port accepts connections but the NATS handshake did not "
      "complete (no greeting within " +
      base::format_duration(timeout) + "): a paused broker or not a NATS port";
  std::string line;
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (line.find('\n') == std::string::npos && line.size() < 64 * 1024) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd wait{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&wait, 1, static_cast<int>(left.count())) <= 0) return silent;
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) return silent;
    line.append(buffer, static_cast<size_t>(n));
  }
  if (!line.starts_with("INFO ")) return "the port answers but is not a NATS server";
  const auto info = nlohmann::json::parse(line.substr(5, line.find('\n') - 5), nullptr,
                                          /*allow_exceptions=*/false);
  if (info.is_discarded() || !info.is_object()) return "the port answers but is not a NATS server";
  const std::string server = "nats-server " + info.value("version", std::string("?"));
  const bool auth = info.value("auth_required", false);
  const bool tls = info.value("tls_required", false);
  if (auth || tls)
    return server + " answers and requires " +
           (auth && tls ? "authentication and TLS"
            : auth      ? "authentication"
                        : "TLS") +
           ": the client's " + (auth ? "credentials were refused (or it has none)" : "TLS failed") +
           (auth && tls ? ", or its TLS failed" : "");
  return server + " answers (it may just be back)";
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
    base::FileDescriptor socket;
    why = tcp_connect(*a, timeout, socket);
    if (why.empty()) return greeting(socket.get(), timeout);
  }
  return why;
}

}  // namespace natsfleet::nats
