// What a pull engine needs from the broker: a fresh inbox to listen on and a way to send pull
// requests to it. In service it is the fleet's nats::Connection (ConnectionInboxLink); unit tests
// script it to play the broker.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "nats/connection.h"
#include "natsfleet/error.h"

namespace natsfleet::consume {

class InboxLink {
 public:
  // Interest in one inbox, read by its owner: destroying it unsubscribes (no read may be under
  // way then).
  class Listening {
   public:
    virtual ~Listening() = default;
    // Appends what reached the inbox, in arrival order, waiting up to `wait` for the first when
    // nothing waits (see nats::PolledSubscription::read). false once closed.
    virtual bool read(std::vector<nats::InboundMessage>& out, std::chrono::milliseconds wait) = 0;
    // Removes interest; a read waiting in another thread returns.
    virtual void close() = 0;
  };
  virtual ~InboxLink() = default;
  // A subject no one else listens on.
  virtual std::string new_inbox() = 0;
  // Listens on `inbox`; what reaches it waits until read.
  virtual Result<std::unique_ptr<Listening>> listen(const std::string& inbox) = 0;
  // Whether a publish now would reach the broker (not merely be buffered for a reconnect).
  virtual bool connected() const = 0;
  // Sends `body` to `subject`, its answers to `reply`. An error: not sent.
  virtual Result<void> publish(const std::string& subject, const std::string& body,
                               const std::string& reply) = 0;
};

// The InboxLink of a running fleet: its connection, which outlives every engine.
class ConnectionInboxLink final : public InboxLink {
 public:
  explicit ConnectionInboxLink(nats::Connection& connection) : connection_(connection) {}
  std::string new_inbox() override { return connection_.new_inbox(); }
  Result<std::unique_ptr<Listening>> listen(const std::string& inbox) override;
  bool connected() const override { return connection_.connected(); }
  Result<void> publish(const std::string& subject, const std::string& body,
                       const std::string& reply) override {
    return connection_.publish(subject, body, reply);
  }

 private:
  nats::Connection& connection_;
};

}  // namespace natsfleet::consume
