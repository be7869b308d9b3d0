#include "fleet/delivery_control.h"

namespace natsfleet {

DeliveryControl::~DeliveryControl() = default;

void Message::in_progress() const {
  if (control_ && !reply_.empty()) control_->in_progress(reply_);
}

}  // namespace natsfleet
