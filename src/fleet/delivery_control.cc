#include "fleet/delivery_control.h"

#include <mutex>

#include "consume/ack_metadata.h"
#include "fleet/transport.h"

namespace natsfleet {

Result<void> DeliveryControl::in_progress(const std::string& reply) {
  std::shared_lock lock(mu_);
  if (transport_ == nullptr)
    return Result<void>(Errc::shutting_down,
                        "in_progress: the subscription that delivered this message has stopped");
  return transport_->publish(reply, consume::kInProgressBody);
}

void DeliveryControl::detach() {
  stop_.request_stop();
  std::unique_lock lock(mu_);
  transport_ = nullptr;
}

Result<void> Message::in_progress() const {
  if (!control_ || reply_.empty()) return {};
  return control_->in_progress(reply_);
}

std::stop_token Message::stop_token() const {
  return control_ ? control_->stop_token() : std::stop_token();
}

}  // namespace natsfleet
