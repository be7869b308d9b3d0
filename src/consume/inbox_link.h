// What a pull engine needs from the broker: a fresh inbox to listen on and a way to send pull
// requests to it. In service it is the fleet's nats::Connection (ConnectionInboxLink); unit tests
// script it to play the broker.
#pragma once

#include <memory>
#include <string>

#include "nats/connection.h"
#include "natsfleet/error.h"

namespace natsfleet::consume {

class InboxLink {
 public:
  // Interest in one inbox: destroying it unsubscribes, after which the callback is never called.
  class Listening {
   public:
    virtual ~Listening() = default;
  };
  virtual ~InboxLink() = default;
  // A subject no one else listens on.
  virtual std::string new_inbox() = 0;
  // Calls `callback` with each burst of messages that reaches `inbox`, in arrival order.
  virtual Result<std::unique_ptr<Listening>> listen(const std::string& inbox,
                                                    nats::BatchCallback callback) = 0;
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
  Result<std::unique_ptr<Listening>> listen(const std::string& inbox,
                                            nats::BatchCallback callback) override;
  bool connected() const override { return connection_.connected(); }
  Result<void> publish(const std::string& subject, const std::string& body,
                       const std::string& reply) override {
    return connection_.publish(subject, body, reply);
  }

 private:
  nats::Connection& connection_;
};

}  // namespace natsfleet::consume
