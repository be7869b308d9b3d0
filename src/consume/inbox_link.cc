#include "consume/inbox_link.h"

namespace natsfleet::consume {
namespace {

class SubscriptionListening final : public InboxLink::Listening {
 public:
  explicit SubscriptionListening(std::unique_ptr<nats::Subscription> sub) : sub_(std::move(sub)) {}

 private:
  std::unique_ptr<nats::Subscription> sub_;
};

}  // namespace

Result<std::unique_ptr<InboxLink::Listening>> ConnectionInboxLink::listen(
    const std::string& inbox, nats::BatchCallback callback) {
  auto sub = connection_.subscribe_batches(inbox, "", std::move(callback));
  if (!sub) return sub.error();
  return std::unique_ptr<Listening>(std::make_unique<SubscriptionListening>(std::move(*sub)));
}

}  // namespace natsfleet::consume
