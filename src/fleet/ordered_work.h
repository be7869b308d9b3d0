// Per-key ordered work (WorkSpec::ordering = per_key), at run time: one shared work
// subscription per partition (fleet/partition_plan.h), each a durable pull consumer with
// max_ack_pending 1, so the broker keeps every partition in stream order and hands it over
// when a replica stops answering. This class adds what spans the partitions:
//   - before anything binds, a probe that the broker maps the work's subject to partitions as
//     the plan says (a missing or different mapping is fatal, with the mapping to add);
//   - at most `concurrency` partitions handled at once on this replica;
//   - a message this replica or another already handled, delivered again (the broker lost an
//     ack, or a paused leader resumed), or a redelivery of one older than it handled in its
//     partition, is acked without the handler (fleet/handled_messages.h): each replica tells
//     the others what it handled on handled_subject_, before its ack;
//   - one health entry: the partitions' states and counters, and which partitions are held.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include "fleet/handled_messages.h"
#include "fleet/partition_plan.h"
#include "fleet/supervised.h"

namespace natsfleet::nats {
class Subscription;
}

namespace natsfleet::fleet {

class ConsumerSubscription;

// What the probe found: "" when the broker maps as planned, else what is wrong in words.
// Publishes one message to the work's subject with a Nats-Expected-Stream header no stream
// has, so no stream stores it, and listens for where the mapping sends it.
std::string probe_partition_mapping(nats::Connection& connection, const PartitionPlan& plan,
                                    std::chrono::milliseconds timeout);

class OrderedWork final : public Supervised {
 public:
  OrderedWork(WorkSpec spec, WorkHandler handler, FleetContext& context);
  ~OrderedWork() override;

  void start() override;
  void connection_changed(bool connected) override;
  void begin_shutdown() override;
  bool finish_handlers(Clock::time_point deadline) override;
  void join() override;
  void wait_handlers() override;
  SubscriptionHealth health() const override;

 private:
  struct Partition {
    std::atomic<uint64_t> handled_to{0};  // the highest stream sequence handled here
    HandledMessages handled;              // the messages handled lately, here and elsewhere
    std::atomic<uint64_t> last_seen{0};   // the stream sequence last handed to this replica
    std::atomic<bool> held{false};
    // Set when the partition's consumer changed (Fencing::consumer_changed): the next message
    // handled here first checks the stream for messages passed over since shortly before.
    std::atomic<bool> check{false};
    std::atomic<HandledMessages::Clock::rep> check_since{0};
  };

  void run();  // the probe, then the partitions start
  Disposition handle(int partition, const Message& message);
  // Before `message` is handled in a partition whose consumer changed: reports (an error line,
  // the passed_over counter) the partition's stored messages since shortly before that no
  // replica is known to have handled. Never a disposition today: nothing waits for the check.
  std::optional<Disposition> check_passed_over(int partition, const Message& message);
  // The handler's verdict, remembered and told to the other replicas.
  void handled(int partition, const Message& message, const Disposition& outcome);
  // Whether a message was handled, looked up in every partition: a consumer whose copy of the
  // stream differs can deliver a message under another partition's consumer.
  std::optional<Handler> handled_anywhere(const Message& message) const;
  // The highest stream sequence this and every other live replica handled in `partition`: each
  // answers on floor_subject_ (see Fencing::fleet_floor).
  uint64_t fleet_floor(int partition);

  const WorkSpec spec_;
  const WorkHandler handler_;
  FleetContext& ctx_;
  const PartitionPlan plan_;
  std::counting_semaphore<> slots_;  // taken by the partitions' handlers (see Fencing)
  std::vector<std::unique_ptr<ConsumerSubscription>> partitions_;
  std::unique_ptr<Partition[]> state_;
  std::atomic<uint64_t> takeovers_{0};
  std::atomic<uint64_t> takeover_wait_ms_{0};
  std::atomic<uint64_t> repeats_skipped_{0};
  std::atomic<uint64_t> passed_over_{0};
  // When the connection last came back (steady clock ticks): peers' notices sent while it was
  // down were not heard, so what they handled then cannot be judged (see check_passed_over).
  std::atomic<HandledMessages::Clock::rep> reconnected_at_{0};

  const std::string floor_subject_;
  std::unique_ptr<nats::Subscription> floor_answers_;  // answers peers' fleet_floor()
  const std::string handled_subject_;                  // "<partition> <seq> <stored ns>" notices
  std::unique_ptr<nats::Subscription> handled_notices_;

  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool connected_ = false;
  bool started_partitions_ = false;
  std::string fatal_;  // the probe's verdict, once fatal
};

}  // namespace natsfleet::fleet
