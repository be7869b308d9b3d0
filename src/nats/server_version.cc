#include "nats/server_version.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <memory>
#include <nlohmann/json.hpp>

namespace natsfleet::nats {
namespace {

using Clock = std::chrono::steady_clock;

Error socket_error(int err, const std::string& what) {
  return {std::error_code(err, std::generic_category()),
          what + ": " + std::generic_category().message(err)};
}

int number_at(std::string_view& text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc()) return -1;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  return value;
}

// A file descriptor closed on every path.
struct Socket {
  int fd = -1;
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
};

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(left.count(), 0));
}

}  // namespace

std::optional<ServerVersion> parse_info_version(std::string_view line) {
  if (line.substr(0, 5) != "INFO ") return std::nullopt;
  const auto info = nlohmann::json::parse(line.substr(5), nullptr, /*allow_exceptions=*/false);
  if (!info.is_object() || !info.contains("version") || !info["version"].is_string())
    return std::nullopt;
  ServerVersion v;
  v.text = info["version"].get<std::string>();
  std::string_view rest = v.text;
  int* parts[] = {&v.major, &v.minor, &v.patch};
  for (size_t i = 0; i < 3; ++i) {
    *parts[i] = number_at(rest);
    if (*parts[i] < 0) return std::nullopt;
    if (i < 2) {
      if (rest.empty() || rest.front() != '.') return std::nullopt;
      rest.remove_prefix(1);
    }
  }
  return v;
}

std::optional<HostPort> server_address(std::string_view url) {
  if (const auto scheme = url.find("://"); scheme != std::string_view::npos) {
    const auto name = url.substr(0, scheme);
    if (name != "nats" && name != "tls") return std::nullopt;
    url.remove_prefix(scheme + 3);
  }
  url = url.substr(0, url.find('/'));
  if (const auto at = url.rfind('@'); at != std::string_view::npos) url.remove_prefix(at + 1);
  HostPort out;
  if (!url.empty() && url.front() == '[') {
    const auto close = url.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    out.host = std::string(url.substr(1, close - 1));
    url.remove_prefix(close + 1);
    if (!url.empty() && url.front() != ':') return std::nullopt;
  } else {
    const auto colon = url.find(':');
    out.host = std::string(url.substr(0, colon));
    url.remove_prefix(colon == std::string_view::npos ? url.size() : colon);
  }
  if (!url.empty()) url.remove_prefix(1);  // the ':'
  out.port = url.empty() ? "4222" : std::string(url);
  if (out.host.empty() || out.port.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return out;
}

namespace {

// Connects `sock` to the first of `addresses` that answers by `deadline`.
Result<void> connect_first(const addrinfo* addresses, Clock::time_point deadline,
                           const std::string& where, Socket& sock) {
  int last_errno = ECONNREFUSED;
  for (const addrinfo* a = addresses; a != nullptr && sock.fd < 0; a = a->ai_next) {
    Socket attempt{::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
    if (attempt.fd < 0) {
      last_errno = errno;
      continue;
    }
    if (::connect(attempt.fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last_errno = errno;
      continue;
    }
    pollfd p{attempt.fd, POLLOUT, 0};
    if (::poll(&p, 1, remaining_ms(deadline)) != 1) {
      last_errno = ETIMEDOUT;
      continue;
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(attempt.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      last_errno = err;
      continue;
    }
    std::swap(sock.fd, attempt.fd);
  }
  if (sock.fd >= 0) return {};
  if (last_errno == ETIMEDOUT)
    return Error{make_error_code(Errc::timeout), "connecting to " + where + " timed out"};
  return socket_error(last_errno, "connecting to " + where);
}

// The server's first line (its INFO), without the CRLF, read by `deadline`.
Result<std::string> read_first_line(int fd, Clock::time_point deadline, const std::string& where) {
  // The INFO line is small (a few hundred bytes; a cluster's connect_urls make it longer).
  constexpr size_t kLongestInfo = 64 * 1024;
  std::string line;
  char buffer[4096];
  while (line.find("\r\n") == std::string::npos) {
    if (line.size() > kLongestInfo)
      return Error{make_error_code(Errc::protocol), where + " sent no INFO line"};
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, remaining_ms(deadline)) != 1)
      return Error{make_error_code(Errc::timeout), where + " sent no INFO line in time"};
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n == 0) return Error{make_error_code(Errc::protocol), where + " closed before INFO"};
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return socket_error(errno, "reading from " + where);
    }
    line.append(buffer, static_cast<size_t>(n));
  }
  line.resize(line.find("\r\n"));
  return line;
}

}  // namespace

Result<ServerVersion> read_server_version(const std::string& url,
                                          std::chrono::milliseconds timeout) {
  const auto address = server_address(url);
  if (!address)
    return Error{make_error_code(Errc::invalid_argument), "not a nats:// or tls:// server address"};
  // Named by host and port only: the URL may carry a user's password.
  const std::string where = address->host + ":" + address->port;
  const auto deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(address->host.c_str(), address->port.c_str(), &hints, &found); rc != 0)
    return Error{make_error_code(Errc::invalid_argument),
                 "resolving " + address->host + ": " + ::gai_strerror(rc)};
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
  Socket sock;
  if (auto connected = connect_first(found, deadline, where, sock); !connected)
    return connected.error();
  auto line = read_first_line(sock.fd, deadline, where);
  if (!line) return line.error();
  auto version = parse_info_version(line.value());
  if (!version)
    return Error{make_error_code(Errc::protocol), where + " sent no version in its INFO line"};
  return *version;
}

}  // namespace natsfleet::nats
