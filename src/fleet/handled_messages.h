// What one partition of per-key ordered work handled lately, on this replica and (told by their
// notices) on the others, so that a delivery of a message already handled is recognised whatever
// its delivery count says and whichever replica gets it. A broker can deliver one again after a
// later message of its key was handled: a consumer leader that lost the ack in a failover
// redelivers it (delivery 2), and a leader paused and resumed answers a pull with it as if new
// (delivery 1, seen with nats-server 2.9 under chaos), to any replica. A message is known by the
// time the stream stored it, which the stream's leader stamps once and every server's copy
// keeps: a broker that renumbers its history after losing messages puts another message (stored
// at another time) at a sequence it handed out before, which must not be taken for a repeat, and
// a server whose copy differs delivers a handled message under another sequence (the same time),
// which must.
//
//   HandledMessages handled;
//   if (is_repeat(handled, handled_to, message) != Repeat::no) return Disposition::ack();
//   ... handle ...; handled.remember(message, Handler::here); tell the other replicas
//   on a peer's notice: handled.remember(HandledMessages::Key{seq, stored_ns}, Handler::peer)
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "natsfleet/error.h"
#include "natsfleet/message.h"

namespace natsfleet::fleet {

enum class Handler { here, peer };

class HandledMessages {
 public:
  using Clock = std::chrono::steady_clock;

  // One message in flight per partition across the fleet: a few hundred cover many seconds of a
  // busy partition.
  static constexpr size_t kRemembered = 512;

  struct Key {
    uint64_t seq = 0;
    int64_t stored_ns = 0;
    bool operator==(const Key&) const = default;
  };
  // The key of a JetStream delivery; none without its stream sequence or stored time.
  static std::optional<Key> key_of(const Message& message);

  // Remembers a handled message; the oldest is forgotten beyond kRemembered. Remembering one
  // again keeps where it was first handled.
  void remember(const Message& message, Handler by, Clock::time_point at = Clock::now());
  void remember(Key key, Handler by, Clock::time_point at = Clock::now());
  // Where `message` (the same stored time) was handled, if remembered.
  std::optional<Handler> find(const Message& message) const;
  bool contains(Key key) const;
  std::optional<Handler> find(Key key) const;
  // The highest stream sequence remembered at or before `at` (0: none), and the lowest
  // remembered (0: none): what is older was forgotten, so nothing can be said of it.
  uint64_t newest_before(Clock::time_point at) const;
  uint64_t oldest() const;
  // The lowest stream sequence remembered at or after `at` (0: none).
  uint64_t oldest_since(Clock::time_point at) const;
  // The highest stream sequence remembered below `seq` (0: none): the message handled last before
  // it, as far as the records tell.
  uint64_t newest_below(uint64_t seq) const;
  // Every message remembered, oldest first.
  std::vector<Key> keys() const;

 private:
  struct Entry {
    Handler by;
    Clock::time_point at;
  };

  mutable std::mutex mu_;
  std::deque<Key> order_;
  std::unordered_map<int64_t, Entry> handled_;  // by stored time
};

// The messages a partition's consumer passed over: stored in the partition after `after` and
// before `seq` (the delivery at hand), and not remembered as handled. nats-server 2.9 can do
// this when a consumer's leader moves to a server whose copy of the stream differs around a
// failover (chaos seed 2604: stream sequence 27822 never delivered, its partition's consumer
// went from 27819 to 27830). `next_stored(after)` gives the partition's first stored message
// after `after` (none: the partition holds nothing more); `handled` says whether a message was
// handled, in any partition (a consumer whose copy of the stream differs can deliver a message
// under another partition's consumer). At most `limit` lookups. The caller starts `after` no
// lower than the oldest message it remembers: below that, "not remembered" says nothing.
using NextStored = std::function<Result<std::optional<Message>>(uint64_t after)>;
Result<std::vector<Message>> passed_over(uint64_t after, uint64_t seq,
                                         const NextStored& next_stored,
                                         const std::function<bool(const Message&)>& handled,
                                         int limit);

// passed_over()'s `handled` test in one walk (passed through std::ref), noting per subject (per
// key: a stored subject names its key) the newest message it found handled. take_moved_on()
// then takes out of `unknown` the messages a later one of their key was handled after: their
// key has moved on, so they can only be reported, and asking the peers about them first costs
// each delivery that finds some kFloorWindow (chaos seed 3301 on nats-server 2.9.10: a replica
// whose records, and its peers', had lost a range found two such per delivery, and the
// partition went at two messages a second for a minute).
class KeyProgress {
 public:
  explicit KeyProgress(std::function<bool(const Message&)> handled)
      : handled_(std::move(handled)) {}
  bool operator()(const Message& m);
  std::vector<Message> take_moved_on(std::vector<Message>& unknown) const;

 private:
  std::function<bool(const Message&)> handled_;
  std::unordered_map<std::string, uint64_t> newest_handled_;
};

// How often each message of one partition was handed from one replica to the others (a message
// held for a failing downstream, given back so that a replica whose downstream works takes it):
// the broker counts each as a delivery, natsfleet does not count it against max_deliver.
// Bounded: a message handed over long ago is forgotten (then its hand-offs count as deliveries).
class HandOffs {
 public:
  static constexpr size_t kRemembered = 256;
  void add(HandledMessages::Key key);
  uint64_t count(HandledMessages::Key key) const;

 private:
  mutable std::mutex mu_;
  std::deque<int64_t> order_;                     // stored times, oldest first
  std::unordered_map<int64_t, uint64_t> counts_;  // by stored time
};

// The notice a replica publishes when it handed a held message to the others, and its reading:
// "<replica> <partition> <stream sequence> <stored time ns>" (a replica ignores its own).
std::string hand_off_notice(uint64_t replica, int partition, HandledMessages::Key key);
bool parse_hand_off_notice(std::string_view text, uint64_t& replica, int& partition,
                           HandledMessages::Key& key);

// The notice a replica publishes when it handled a message of a partition, and its reading:
// "<partition> <stream sequence> <stored time ns>".
std::string handled_notice(int partition, HandledMessages::Key key);
bool parse_handled_notice(std::string_view text, int& partition, HandledMessages::Key& key);

// What a replica asks its peers about messages it found no record of: "<partition> <stored ns>
// ...". Each answers with the stored times it knows as handled: "<stored ns> ...".
std::string handled_question(int partition, const std::vector<int64_t>& stored_ns);
// What a replica that may have missed notices asks its peers: "<partition> all". Each answers
// with every message of the partition it remembers: "<partition> <seq> <stored ns> ...".
std::string catch_up_question(int partition);
bool is_catch_up_question(std::string_view text);
std::string catch_up_answer(int partition, const std::vector<HandledMessages::Key>& keys);
bool parse_catch_up_answer(std::string_view text, int& partition,
                           std::vector<HandledMessages::Key>& keys);
// Whole numbers separated by single spaces ("" is none); nullopt when any token is not one.
std::optional<std::vector<int64_t>> parse_number_list(std::string_view text);

enum class Repeat {
  no,
  handled_here,       // this replica handled it
  handled_elsewhere,  // another replica did (its notice said so)
  settled_before,     // a redelivery older than the newest handled here: settled before that one
};

// Whether a delivery of ordered work is one to ack without calling the handler: the same message
// was handled already (`handled`), or it is a redelivery of a message older than the newest
// handled here in its partition (`handled_to`), which was settled before that one could be
// delivered. A first delivery older than handled_to that was not handled is handled: a broker
// failing over can deliver a message late, and skipping it would lose it.
Repeat is_repeat(const HandledMessages& handled, uint64_t handled_to, const Message& message);

}  // namespace natsfleet::fleet
