// The tests' HTTP client: one request on a fresh connection to a loopback port, bounded by a
// timeout, for health endpoints, the broker's monitoring port and test servers alike.
//
//   auto reply = http_request(port, "GET", "/readyz");
//   EXPECT_EQ(reply.status, 200);
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace natsfleet::testing {

struct HttpReply {
  int status = -1;  // -1: no parseable answer within the timeout (refused, paused server...)
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  // The first header of that name (case-insensitive), "" when there is none.
  std::string header(std::string_view name) const;
};

// `method target` as HTTP/1.0 to 127.0.0.1:port, read until the server closes: no keep-alive
// and no chunked answers to decode. The whole exchange is bounded by `timeout`.
HttpReply http_request(int port, std::string_view method, const std::string& target,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(1'000));

// GET: the body; *status gets the status code, or -1 without an answer.
std::string http_get(int port, const std::string& path, int* status,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(1'000));

}  // namespace natsfleet::testing
