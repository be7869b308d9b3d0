#include "fleet/ordered/key_lanes.h"

namespace natsfleet::fleet {

bool KeyLanes::push(const std::string& key, Item item) {
  const uint64_t seq = item.message.stream_seq();
  read_to_ = std::max(read_to_, seq);
  open_.insert(seq);
  auto& lane = lanes_[key];
  lane.push_back(std::move(item));
  return lane.size() == 1;
}

KeyLanes::Item& KeyLanes::front(const std::string& key) { return lanes_.at(key).front(); }

bool KeyLanes::pop(const std::string& key) {
  auto it = lanes_.find(key);
  if (it == lanes_.end() || it->second.empty()) return false;
  open_.erase(it->second.front().message.stream_seq());
  it->second.pop_front();
  if (!it->second.empty()) return true;
  lanes_.erase(it);
  return false;
}

void KeyLanes::clear() {
  const uint64_t kept = checkpoint();
  lanes_.clear();
  open_.clear();
  read_to_ = kept;
}

}  // namespace natsfleet::fleet
