// Per-key ordered work (WorkSpec::per_key) at run time. The broker maps each key to a
// partition (PartitionPlan, checked by a probe before anything starts); each partition has one
// owner at a time, by lease (PartitionLeases: the epoch is the lease's revision); the owner reads
// its partition as a log (PartitionReader) into per-key lanes (KeyLanes) that `concurrency`
// handler threads run: a key's messages one at a time in stream order, different keys at once.
// Every delivery carries the fencing token (partition, epoch, stream sequence), so a downstream
// can refuse the late write of an owner that was paused past its lease.
//
// A handler's verdict, per message: ack (done); retry (the downstream is down: held in its lane
// and tried again with backoff, no delivery used); nak or a throw (tried again in place after a
// delay, up to max_deliver tries, then dead-lettered); term (dead-lettered). Nothing is ever
// nak'd to the broker: a message leaves its lane only done, so its key never goes back in time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "fleet/ordered/lane_schedule.h"
#include "fleet/ordered/partition_leases.h"
#include "fleet/ordered/partition_plan.h"
#include "fleet/subscription_status.h"
#include "fleet/supervised.h"
#include "fleet/transport.h"
#include "nats/jetstream_api.h"

namespace natsfleet::fleet {

class PartitionLeases;
class PartitionReader;
class StreamLeaseStore;

class OrderedWork final : public Supervised {
 public:
  OrderedWork(WorkSpec spec, WorkHandler handler, FleetContext& context);
  ~OrderedWork() override;

  void start() override;
  void connection_changed(bool connected) override;
  void begin_shutdown() override;
  bool finish_handlers(Clock::time_point deadline) override;
  void join() override;
  bool await_handlers(Clock::time_point until) override;
  SubscriptionHealth health() const override;

 private:
  // Waits for every handler thread to end (after finish_handlers()).
  void join_handlers();
  // A lane ready to run: a key of a partition's current reader.
  using Ready = LaneSchedule::Lane;
  // An owned partition: its reader, and whether it is being handed over.
  struct Owned {
    std::shared_ptr<PartitionReader> reader;
    bool opened = false;
    bool draining = false;  // assigned elsewhere: reads nothing more, finishes its lanes
    bool stopped = false;   // draining, and its reader stopped
    bool drained = false;   // draining, and nothing left: the lease goes back
    // The only thread that calls the reader's open(), tick() and stop(): a broker call of one
    // partition's reader (up to 5 s while a meta leader is elected) delays no other partition.
    std::jthread tender;
    Clock::time_point drain_deadline{};
    int running = 0;                // handlers under way
    Clock::time_point next_open{};  // after the broker refused to open it
    std::chrono::milliseconds open_backoff{125};
  };

  // The lease thread: probe, bucket, then lease rounds (a tenth of the lease, <= 0.5 s), and
  // releases of drained partitions. It never waits on a reader's broker calls.
  void run();
  bool set_up();
  void round();
  void take(int partition);
  // The partition stops here: at once (lost), or once drained (released).
  void drop(int partition);
  void release_drained();
  // A partition's tending thread: tend() every tick until stopped, then stops the reader.
  void tend_loop(int partition, std::shared_ptr<PartitionReader> reader, std::stop_token stop);
  // One tick of a partition's thread: drains, stops, opens or reads, as its owner's state asks.
  void tend(int partition, const std::shared_ptr<PartitionReader>& reader);
  // Stops the reader of a draining partition and marks it stopped.
  void stop_reader(int partition, const std::shared_ptr<PartitionReader>& reader);
  // Opens the reader once its back-off allows; the keys it finds waiting become ready.
  void open_reader(int partition, const std::shared_ptr<PartitionReader>& reader);
  // Reads what the partition's log holds now; the keys it finds waiting become ready.
  void read_partition(int partition, const std::shared_ptr<PartitionReader>& reader);
  // Under mu_: asks the partition's tending thread to stop; join_retired() joins it.
  void retire_locked(Owned& o);
  void join_retired();
  void work_loop();
  // Says how a reader opened: the last owner's consumer adopted, or why not.
  void log_open(int partition, PartitionReader& reader, const Result<void>& open);
  // Under mu_: the next lane that may run now (due retries first become ready).
  bool next_ready(std::unique_lock<std::mutex>& lock, Ready& out);
  // The lane's front message through the handler (mu_ released meanwhile), then its verdict.
  void run_one(std::unique_lock<std::mutex>& lock, Ready lane);
  // What becomes of `message`: ack, retry (the downstream, or a dead letter not stored yet), nak,
  // or term once it is set aside (a term, or a nak on its last delivery).
  Disposition judge(const Message& message, int partition, int rejections, int64_t retried_at);
  // Stores the dead letter (when the work has one) and says so; an error: not stored.
  Result<void> set_aside(const Message& message, int partition, const std::string& reason);
  // Under mu_: the verdict applied to the lane (next message, or this one again later).
  void settle_lane(PartitionReader& reader, Ready lane, const Disposition& outcome, int rejections);
  // Under mu_: the lane runs again after `delay`.
  void wake_later(Ready lane, std::chrono::milliseconds delay);
  // The partition's checkpoint and the consumer read through (the lease's while nothing is read).
  Progress progress(int partition);
  void wait_for(std::chrono::milliseconds d);

  const WorkSpec spec_;
  const WorkHandler handler_;
  FleetContext& ctx_;
  const PartitionPlan plan_;
  const std::string me_;
  SubscriptionStatus status_;
  ConnectionTransport transport_;  // dead letters
  nats::JetStreamApi api_;         // the lease bucket, the stream
  nats::JetStreamApi reader_api_;  // the readers' consumers
  std::string stream_;
  nats::RetentionPolicy retention_ = nats::RetentionPolicy::limits;
  std::unique_ptr<StreamLeaseStore> store_;
  std::unique_ptr<PartitionLeases> leases_;

  std::thread thread_;  // the lease thread
  std::vector<std::thread> workers_;

  mutable std::mutex mu_;         // the readers' lanes and everything below
  std::condition_variable wake_;  // a lane is ready, a delay ran out, or stopping
  std::map<int, Owned> owned_;
  std::vector<std::jthread> retired_;  // tending threads asked to stop, to join without mu_
  std::condition_variable tend_wake_;  // a tending thread is asked to stop, or stopping
  LaneSchedule schedule_;              // which lanes are ready, waiting for a retry, or running
  bool stopping_ = false;
  bool connected_ = false;
  bool started_ = false;
  std::string fatal_;
  Clock::time_point last_round_ok_{};
  std::string round_error_;
  int retry_streak_ = 0;  // retryable failures since the last success (the downstream's backoff)
  std::atomic<Clock::rep> last_success_{0};  // when a handler last acked (steady clock ticks)

  std::atomic<uint64_t> leases_taken_{0};
  std::atomic<uint64_t> leases_lost_{0};
  std::atomic<uint64_t> rewinds_{0};
};

}  // namespace natsfleet::fleet
