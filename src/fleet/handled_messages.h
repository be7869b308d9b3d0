// What one partition of per-key ordered work handled here lately, so that a delivery of a
// message already handled is recognised whatever its delivery count says. A broker can deliver
// one again after a later message of its key was handled: a consumer leader that lost the ack in
// a failover redelivers it (delivery 2), and a leader paused and resumed answers a pull with it
// as if new (delivery 1, seen with nats-server 2.9 under chaos). A message is known by its
// stream sequence and the time the stream stored it: a broker that renumbers its history after
// losing messages puts another message (stored at another time) at a sequence it handed out
// before, and that one must not be taken for a repeat.
//
//   HandledMessages handled;
//   if (is_repeat(handled, handled_to, message)) return Disposition::ack();   // not again
//   ... handle ...; handled.remember(message);
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_set>

#include "natsfleet/message.h"

namespace natsfleet::fleet {

class HandledMessages {
 public:
  // One message in flight per partition: a few hundred cover many seconds of a busy partition.
  static constexpr size_t kRemembered = 512;

  // Remembers `message` as handled; the oldest is forgotten beyond kRemembered. A message with
  // no stream sequence or stored time (not a JetStream delivery) is not remembered.
  void remember(const Message& message);
  // Whether `message` (the same stream sequence and stored time) was remembered.
  bool contains(const Message& message) const;

 private:
  struct Key {
    uint64_t seq;
    int64_t stored_ns;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const noexcept {
      return std::hash<uint64_t>()(k.seq) ^ (std::hash<int64_t>()(k.stored_ns) << 1);
    }
  };
  static bool key_of(const Message& message, Key& key);

  mutable std::mutex mu_;
  std::deque<Key> order_;
  std::unordered_set<Key, KeyHash> keys_;
};

// Whether a delivery of ordered work is one to ack without calling the handler: the same message
// was handled here already (`handled`), or it is a redelivery of a message older than the newest
// handled here in its partition (`handled_to`), which was settled before that one could be
// delivered. A first delivery older than handled_to that was not handled here is handled: a
// broker failing over can deliver a message late, and skipping it would lose it.
bool is_repeat(const HandledMessages& handled, uint64_t handled_to, const Message& message);

}  // namespace natsfleet::fleet
