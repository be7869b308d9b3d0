#include "fleet/handled_messages.h"

namespace natsfleet::fleet {

bool HandledMessages::key_of(const Message& message, Key& key) {
  const auto& delivery = message.delivery();
  if (!delivery || delivery->stream_seq == 0 || delivery->timestamp_ns == 0) return false;
  key = Key{delivery->stream_seq, delivery->timestamp_ns};
  return true;
}

void HandledMessages::remember(const Message& message) {
  Key key{};
  if (!key_of(message, key)) return;
  std::lock_guard lock(mu_);
  if (!keys_.insert(key).second) return;
  order_.push_back(key);
  if (order_.size() > kRemembered) {
    keys_.erase(order_.front());
    order_.pop_front();
  }
}

bool HandledMessages::contains(const Message& message) const {
  Key key{};
  if (!key_of(message, key)) return false;
  std::lock_guard lock(mu_);
  return keys_.count(key) > 0;
}

bool is_repeat(const HandledMessages& handled, uint64_t handled_to, const Message& message) {
  const uint64_t seq = message.stream_seq();
  if (seq != 0 && message.delivered() > 1 && seq <= handled_to) return true;
  return handled.contains(message);
}

}  // namespace natsfleet::fleet
