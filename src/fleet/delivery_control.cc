#include "fleet/delivery_control.h"

#include <mutex>

#include "consume/ack_metadata.h"
#include "nats/connection.h"

namespace natsfleet {

Result<void> DeliveryControl::in_progress(const std::string& reply) {
  std::shared_lock lock(mu_);
  if (connection_ == nullptr)
    return Result<void>(Errc::shutting_down,
                        "in_progress: the subscription that delivered this message has stopped");
  return connection_->publish(reply, std::string(consume::kInProgressBody));
}

void DeliveryControl::detach() {
  std::unique_lock lock(mu_);
  connection_ = nullptr;
}

Result<void> Message::in_progress() const {
  if (!control_ || reply_.empty()) return {};
  return control_->in_progress(reply_);
}

}  // namespace natsfleet
