// The messages an owner has read from its partition, in lanes by key: a key's messages are
// handled one at a time in stream order, different keys at once. The checkpoint is the stream
// sequence at or below which every message read is done, the point a next owner resumes after.
//
//   KeyLanes lanes(/*start_after=*/41);
//   if (lanes.push("k1", message)) ready.push_back("k1");  // the key had nothing waiting
//   Item& next = lanes.front("k1");  ...  if (lanes.pop("k1")) ready.push_back("k1");
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <unordered_map>

#include "natsfleet/message.h"

namespace natsfleet::fleet {

class KeyLanes {
 public:
  struct Item {
    Message message;
    std::string reply;  // where the delivery's ack goes
    int rejections = 0;
    // When its handler last answered retry (steady clock ticks; 0: never).
    int64_t retried_at = 0;
    uint64_t generation = 0;  // of the reader's consumer that delivered it
  };

  // Nothing at or below `start_after` is read in this term.
  explicit KeyLanes(uint64_t start_after) : read_to_(start_after) {}

  // Adds the next message read (stream sequences rise). True when its key had nothing waiting,
  // so the lane has become ready to run.
  bool push(const std::string& key, Item item);
  bool has(const std::string& key) const { return lanes_.count(key) != 0; }
  // The key's oldest message not yet done. The key must have one.
  Item& front(const std::string& key);
  // The key's oldest message is done. True when another of the key waits (still ready).
  bool pop(const std::string& key);
  // Forgets every waiting message (the partition is given up); the checkpoint stays.
  void clear();

  // The highest stream sequence read.
  uint64_t read_to() const { return read_to_; }
  // Every message at or below it is done.
  uint64_t checkpoint() const { return open_.empty() ? read_to_ : *open_.begin() - 1; }
  size_t waiting() const { return open_.size(); }
  bool empty() const { return open_.empty(); }

 private:
  std::unordered_map<std::string, std::deque<Item>> lanes_;
  std::set<uint64_t> open_;  // read, not done
  uint64_t read_to_;
};

}  // namespace natsfleet::fleet
