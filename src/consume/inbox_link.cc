#include "consume/inbox_link.h"

namespace natsfleet::consume {
namespace {

class SubscriptionListening final : public InboxLink::Listening {
 public:
  explicit SubscriptionListening(std::unique_ptr<nats::PolledSubscription> sub)
      : sub_(std::move(sub)) {}
  bool read(std::vector<nats::InboundMessage>& out, std::chrono::milliseconds wait) override {
    return sub_->read(out, wait);
  }
  void close() override { sub_->close(); }

 private:
  std::unique_ptr<nats::PolledSubscription> sub_;
};

}  // namespace

Result<std::unique_ptr<InboxLink::Listening>> ConnectionInboxLink::listen(
    const std::string& inbox) {
  auto sub = connection_.subscribe_polled(inbox);
  if (!sub) return sub.error();
  return std::unique_ptr<Listening>(std::make_unique<SubscriptionListening>(std::move(*sub)));
}

}  // namespace natsfleet::consume
