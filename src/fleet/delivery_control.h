// What stands behind natsfleet::DeliveryControl, the handle a Message keeps so that a handler's
// Message::in_progress() reaches the broker. The public header only names the type: a Message
// carries a shared_ptr to it and costs no allocation of its own.
#pragma once

#include <string>

#include "natsfleet/message.h"

namespace natsfleet {

// One per subscription; called from handler threads, concurrently.
class DeliveryControl {
 public:
  virtual ~DeliveryControl();
  // Sends an in-progress ack to the delivery's reply subject; errors are dropped (the broker
  // redelivers after ack_wait, as if the handler had not called).
  virtual void in_progress(const std::string& reply) = 0;
};

}  // namespace natsfleet
