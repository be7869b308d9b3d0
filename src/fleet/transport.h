// What a subscription's delivery path sends to the broker, as an interface: acks, naks,
// in-progress acks, an ack whose application is awaited, a dead letter's store. In service it is
// the fleet's nats::Connection (ConnectionTransport); unit tests script it.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "natsfleet/error.h"
#include "natsfleet/message.h"

namespace natsfleet::nats {
class Connection;
}

namespace natsfleet::fleet {

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends `body` to `subject` and returns without an answer. An error: not sent (not connected).
  virtual Result<void> publish(const std::string& subject, std::string_view body) = 0;
  // Sends and waits up to `timeout` for the answer's data. Errors: timeout, no_responders, the
  // connection's own.
  virtual Result<std::string> request(const std::string& subject, std::string_view body,
                                      const Headers& headers,
                                      std::chrono::milliseconds timeout) = 0;
};

// The Transport of a running fleet: its connection, which outlives every subscription.
class ConnectionTransport final : public Transport {
 public:
  explicit ConnectionTransport(nats::Connection& connection) : connection_(connection) {}
  Result<void> publish(const std::string& subject, std::string_view body) override;
  Result<std::string> request(const std::string& subject, std::string_view body,
                              const Headers& headers, std::chrono::milliseconds timeout) override;

 private:
  nats::Connection& connection_;
};

}  // namespace natsfleet::fleet
