// An owner reading its partition as a log, for one epoch of its lease. The partition is read
// through one consumer (`<work>-p<p>-e<epoch>g<n>`, acked with AckAll) that nobody else pulls
// from, so nobody else's deliveries or redeliveries interleave with it. A new owner adopts the
// consumer its predecessor read through (named in the lease) when its server answers: what that
// consumer delivered past the checkpoint is read again with gets by subject, the rest follows
// from its next delivery, and nothing is made through the meta leader. Deliveries come
// pipelined (consume::PullEngine), many in flight, and follow the log rule (LogCursor): after a
// hole nothing is taken and the reader rewinds: a new consumer from the checkpoint + 1, the old
// one deleted. A message at or below what was read already is known: skipped (its delivery is
// kept only to ack the checkpoint through the current consumer).
// A consumer found gone (looked up after missed heartbeats or a status) rewinds too, and so does
// one that serves nothing while the stream's leader holds a message past what was read
// (ReaderWatch). Acks: AckAll
// at the checkpoint (on a work-queue stream, which takes explicit acks only, each delivery up to
// it), so interest and work-queue streams let go of what is done.
//
// Threads: accept(), done() and lanes() under `Setup::mu`, held by the caller; open(), tick()
// and stop() on the partition's tending thread without it (they take it when they need it, and
// wait for nats.c's callbacks without it).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "consume/pull_engine.h"
#include "fleet/delivery_control.h"
#include "fleet/ordered/key_lanes.h"
#include "fleet/ordered/log_cursor.h"
#include "fleet/ordered/reader_watch.h"
#include "nats/jetstream_api.h"
#include "nats/stream_config.h"
#include "natsfleet/spec.h"

namespace natsfleet::fleet {

class PartitionPlan;

// The partition's next message at or after a stream sequence (a get by subject).
using GetNext = std::function<Result<nats::StoredMessage>(uint64_t seq)>;
// What a consumer delivered after its ack `floor` up to `delivered`, read with `get`, of which
// those above `done` are returned. Every delivery after the floor waits for its ack, so the reads
// must find `pending` messages: fewer means the stream's leader has not yet stored what the
// consumer's server delivered from its own copy (an error: what it lacks would be lost); more, a
// consumer whose state does not add up (an error found at the first message too many).
Result<std::vector<nats::StoredMessage>> read_delivered(const GetNext& get, uint64_t floor,
                                                        uint64_t done, uint64_t delivered,
                                                        uint64_t pending);

// A consumer of the partition looked up by name.
using LookUp = std::function<Result<nats::ConsumerInfo>(const std::string& consumer)>;
// The highest and lowest ack floor among the partition's earlier `consumers` that answered
// (0 and UINT64_MAX when none did). The lookups run at once, so consumers on a server that does
// not answer cost one timeout together, not one each.
struct EarlierFloors {
  uint64_t highest = 0;
  uint64_t lowest = UINT64_MAX;
};
EarlierFloors earlier_floors(const std::vector<std::string>& consumers, const LookUp& look_up);

class PartitionReader {
 public:
  struct Setup {
    std::mutex* mu = nullptr;  // guards the lanes; the caller's
    nats::Connection* connection = nullptr;
    nats::JetStreamApi* api = nullptr;
    const PartitionPlan* plan = nullptr;
    const WorkSpec* spec = nullptr;
    std::string stream;
    nats::RetentionPolicy retention = nats::RetentionPolicy::limits;
    int partition = 0;
    uint64_t epoch = 0;
    uint64_t checkpoint = 0;  // the lease's: every message at or below it is done
    // No lease was ever written for the partition: where to begin (WorkSpec::start).
    bool first_term = false;
    std::string adopt;  // the consumer the last owner read through (the lease's); empty: none
    int window = 256;   // messages read and not done, at most
  };
  // Called from the engine's reading thread with this reader's deliveries; it takes the caller's
  // lock and calls accept().
  using Deliver = std::function<void(PartitionReader&, std::vector<nats::InboundMessage>&)>;

  PartitionReader(Setup setup, Deliver deliver);
  ~PartitionReader();
  PartitionReader(const PartitionReader&) = delete;
  PartitionReader& operator=(const PartitionReader&) = delete;

  // Adopts the last owner's consumer, or finds where to resume (the lease's checkpoint, the ack
  // floors of the partition's consumers), makes a consumer and deletes the older ones; then starts
  // reading. The keys whose lanes it filled (read before any delivery) go to `ready`.
  Result<void> open(std::vector<std::string>& ready);
  // Under the caller's lock: the log rule above; the keys whose lanes became ready go to `ready`.
  void accept(std::vector<nats::InboundMessage>& batch, std::vector<std::string>& ready);
  // Under the lock: the key's front message is done (popped). True when its lane has more.
  bool done(const std::string& key);
  // Upkeep, every tick: pulls, a rewind when one is due, the checkpoint's ack. While no consumer
  // can be made, the partition is read by gets (answered by the stream's leader, not the meta
  // leader); the keys whose lanes became ready go to `ready`.
  void tick(std::vector<std::string>& ready);
  // The connection came back: the next tick pulls afresh (waiting requests may be gone).
  void reconnected() { reconnected_ = true; }
  // Stops reading (no deliveries once it returns) and acks the checkpoint.
  void stop();
  // The partition is given up (any thread): from now on the reader makes and deletes no consumer,
  // so a tick that was under way cannot replace the next owner's; its handlers' messages see
  // their stop_token() requested (their verdicts no longer count).
  void retire() {
    retired_ = true;
    control_->request_stop();
  }
  // The work is stopping (any thread): its handlers' messages see their stop_token() requested.
  void request_stop() { control_->request_stop(); }

  int partition() const { return setup_.partition; }
  // Under the caller's lock: the consumer read through (empty while there is none).
  const std::string& consumer() const { return consumer_; }
  uint64_t epoch() const { return setup_.epoch; }
  // Under the caller's lock.
  KeyLanes& lanes() { return lanes_; }
  uint64_t rewinds() const { return rewinds_.load(); }
  // Whether open() adopted the last owner's consumer, and why not when it tried (tending thread).
  bool adopted() const { return adopted_; }
  const std::string& adopt_error() const { return adopt_error_; }
  // Why the reader last rewound (tending thread).
  const std::string& last_rewind_why() const { return last_rewind_why_; }
  // The key of a message read from the partition (its key token).
  std::string key_of(const std::string& subject) const;

 private:
  std::string consumer_name(uint64_t generation) const;
  // consumer_, read under Setup::mu (for the tending thread).
  std::string current_consumer() const;
  // A consumer of this partition's readers, of any epoch and generation.
  bool of_partition(const std::string& consumer) const;
  // Takes over Setup::adopt from its next delivery, the messages it delivered past the
  // checkpoint read with gets by subject. Fails, changing nothing, when it cannot.
  Result<void> adopt(std::vector<std::string>& ready);
  // Under Setup::mu: a message read by a get, into its key's lane as an earlier consumer's.
  void push_stored_locked(nats::StoredMessage&& m, std::vector<std::string>& ready);
  // The next messages after what was read, by gets, while there is room (no consumer).
  void read_by_gets(std::vector<std::string>& ready);
  // A consumer could not be made: the next try waits longer (up to a second).
  void make_failed(const std::string& why);
  // Lists the partition's consumers and marks all but this reader's for deletion.
  void sweep();
  // Makes consumer `generation` reading from `start`; the others of the partition are deleted
  // before it on a work-queue stream, on the next tick otherwise.
  Result<void> make_consumer(uint64_t start);
  Result<void> start_engine();
  void stop_engine();
  void rewind(const std::string& why);
  // Asks the stream's leader, when ReaderWatch says to, whether the consumer serves; why not if
  // it does not.
  std::string look(std::chrono::steady_clock::time_point now, uint64_t read_to, bool room);
  void ack_checkpoint_locked();
  void delete_old_consumers();

  const Setup setup_;
  const Deliver deliver_;
  std::string prefix_;  // of every consumer of the partition, "<work>-p<p>"

  // Under Setup::mu.
  KeyLanes lanes_;
  uint64_t generation_ = 0;
  std::string consumer_;
  std::unique_ptr<consume::PullEngine> engine_;
  size_t inherited_ = 0;  // messages in the lanes from an earlier generation's consumer
  LogCursor cursor_;
  std::map<uint64_t, std::string> replies_;  // stream seq -> the current consumer's delivery
  uint64_t acked_ = 0;

  // The tending thread.
  std::vector<std::string> to_delete_;
  std::atomic<uint64_t> rewinds_{0};
  std::chrono::steady_clock::time_point next_lookup_{};  // of the consumer, after a silence
  std::chrono::steady_clock::time_point next_make_{};    // of a consumer the broker refused
  std::chrono::milliseconds make_backoff_{125};
  uint64_t unmade_start_ = 0;  // where open() meant its consumer to start, until one is made
  std::string last_rewind_why_;
  ReaderWatch watch_;
  bool adopted_ = false;
  std::string adopt_error_;
  std::chrono::steady_clock::time_point acked_at_{};
  std::chrono::steady_clock::time_point next_sweep_{};  // of the partition's other consumers
  std::mutex signal_mu_;
  bool lost_consumer_ = false;  // a status said it is gone
  std::atomic<bool> reconnected_{false};
  std::atomic<bool> retired_{false};
  // Its messages' stop_token(); they are kept alive by the reader, not by in-progress acks.
  const std::shared_ptr<DeliveryControl> control_ = std::make_shared<DeliveryControl>(nullptr);
};

}  // namespace natsfleet::fleet
