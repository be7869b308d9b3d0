// What stands behind natsfleet::DeliveryControl, the handle a Message keeps so that a handler's
// Message::in_progress() reaches the broker. The public header only names the type: a Message
// carries a shared_ptr to it and costs no allocation of its own.
#pragma once

#include <shared_mutex>
#include <string>

#include "natsfleet/error.h"
#include "natsfleet/message.h"

namespace natsfleet::nats {
class Connection;
}

namespace natsfleet {

// One per subscription; called from any thread, concurrently, for as long as a copy of one of
// its messages lives: before and after the subscription and its fleet are gone.
class DeliveryControl {
 public:
  explicit DeliveryControl(nats::Connection& connection) : connection_(&connection) {}

  // Sends an in-progress ack to the delivery's reply subject. Errors: shutting_down once
  // detach() ran; the connection's own (not_connected, ...) when it could not be sent.
  Result<void> in_progress(const std::string& reply);

  // The subscription goes, and the connection with it: every later call fails. Waits for calls
  // under way.
  void detach();

 private:
  std::shared_mutex mu_;
  nats::Connection* connection_;  // null once detached
};

}  // namespace natsfleet
