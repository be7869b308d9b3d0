// What stands behind natsfleet::DeliveryControl, the handle a Message keeps so that a handler's
// Message::in_progress() reaches the broker and Message::stop_token() sees its subscription
// stop. The public header only names the type: a Message carries a shared_ptr to it and costs no
// allocation of its own.
#pragma once

#include <shared_mutex>
#include <stop_token>
#include <string>

#include "natsfleet/error.h"
#include "natsfleet/message.h"

namespace natsfleet::fleet {
class Transport;
}

namespace natsfleet {

// One per subscription; called from any thread, concurrently, for as long as a copy of one of
// its messages lives: before and after the subscription and its fleet are gone.
class DeliveryControl {
 public:
  // Without a transport (ordered work's and core broadcasts' messages, which are not kept alive
  // by in-progress acks), in_progress() fails with shutting_down as after detach().
  explicit DeliveryControl(fleet::Transport* transport) : transport_(transport) {}

  // Sends an in-progress ack to the delivery's reply subject. Errors: shutting_down once
  // detach() ran; the transport's own (not_connected, ...) when it could not be sent.
  Result<void> in_progress(const std::string& reply);

  // Requested once the subscription begins to stop; never withdrawn.
  std::stop_token stop_token() const { return stop_.get_token(); }
  void request_stop() { stop_.request_stop(); }

  // The subscription goes, and its transport with it: every later call fails and the stop is
  // requested. Waits for calls under way.
  void detach();

 private:
  std::shared_mutex mu_;
  fleet::Transport* transport_;  // null once detached
  std::stop_source stop_;
};

}  // namespace natsfleet
