#include "support/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <utility>

#include "base/file_descriptor.h"

namespace natsfleet::testing {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

// "HTTP/1.x NNN Reason\r\nName: value\r\n...\r\n\r\nbody"; status -1 when it is not that.
HttpReply parse_response(const std::string& response) {
  HttpReply reply;
  if (response.rfind("HTTP/", 0) != 0) return reply;
  const size_t space = response.find(' ');
  if (space == std::string::npos || space + 4 > response.size()) return reply;
  int code = 0;
  for (size_t i = space + 1; i < space + 4; ++i) {
    if (std::isdigit(static_cast<unsigned char>(response[i])) == 0) return reply;
    code = code * 10 + (response[i] - '0');
  }
  const size_t head_end = response.find("\r\n\r\n");
  const std::string_view head(response.data(), std::min(head_end, response.size()));
  size_t line = head.find("\r\n");
  while (line != std::string_view::npos) {
    const size_t start = line + 2;
    const size_t end = std::min(head.find("\r\n", start), head.size());
    const std::string_view field = head.substr(start, end - start);
    if (const size_t colon = field.find(':'); colon != std::string_view::npos)
      reply.headers.emplace_back(std::string(trim(field.substr(0, colon))),
                                 std::string(trim(field.substr(colon + 1))));
    line = end < head.size() ? end : std::string_view::npos;
  }
  reply.status = code;
  if (head_end != std::string::npos) reply.body = response.substr(head_end + 4);
  return reply;
}

}  // namespace

std::string HttpReply::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (iequals(key, name)) return value;
  return {};
}

HttpReply http_request(int port, std::string_view method, const std::string& target,
                       std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const base::FileDescriptor fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return {};
  // Per-call socket timeouts bound connect, send and each recv; the loop below bounds the total.
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return {};

  std::string request(method);
  request += " " + target + " HTTP/1.0\r\nHost: 127.0.0.1:" + std::to_string(port) +
             "\r\nConnection: close\r\n\r\n";
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    sent += static_cast<size_t>(n);
  }

  std::string response;
  char buffer[4096];
  while (true) {
    if (std::chrono::steady_clock::now() >= deadline) return {};
    const ssize_t n = ::recv(fd.get(), buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return {};
    if (n == 0) break;
    response.append(buffer, static_cast<size_t>(n));
  }
  return parse_response(response);
}

std::string http_get(int port, const std::string& path, int* status,
                     std::chrono::milliseconds timeout) {
  HttpReply reply = http_request(port, "GET", path, timeout);
  if (status != nullptr) *status = reply.status;
  return std::move(reply.body);
}

}  // namespace natsfleet::testing
