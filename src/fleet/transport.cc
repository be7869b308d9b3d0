#include "fleet/transport.h"

#include "nats/connection.h"

namespace natsfleet::fleet {

Result<void> ConnectionTransport::publish(const std::string& subject, std::string_view body) {
  return connection_.publish(subject, std::string(body));
}

Result<std::string> ConnectionTransport::request(const std::string& subject, std::string_view body,
                                                 const Headers& headers,
                                                 std::chrono::milliseconds timeout) {
  auto reply = headers.empty() ? connection_.request(subject, std::string(body), timeout)
                               : connection_.request(subject, std::string(body), headers, timeout);
  if (!reply) return reply.error();
  return std::move(reply->data);
}

}  // namespace natsfleet::fleet
