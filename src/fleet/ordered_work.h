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
//   - a message a partition's consumer passed over (never delivered, though the stream holds
//     it), found after the consumer or the stream changes leader, is handled with the
//     partition's next delivery, or reported if a later message of its key came first;
//   - one health entry: the partitions' states and counters, and which partitions are held.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fleet/handled_messages.h"
#include "fleet/partition_plan.h"
#include "fleet/supervised.h"

namespace natsfleet::nats {
class JetStreamApi;
class Subscription;
}  // namespace natsfleet::nats

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
    // The stream sequence of a delivery of another partition's message (its leader's copy of
    // the stream differs) whose own partition has earlier messages not known as handled.
    std::atomic<uint64_t> foreign_behind{0};
    // Set when the partition's consumer changed (Fencing::consumer_changed): the next message
    // handled here queues a check of the stream for messages passed over since shortly before.
    std::atomic<bool> check{false};
    // From mark_for_check() until a check of the partition is made (read the stream to its end).
    std::atomic<bool> check_open{false};
    std::atomic<HandledMessages::Clock::rep> check_since{0};
    // Until then (steady clock ticks), a first delivery looks up the earlier messages of its
    // key itself before it is handled (owe_passed_over_of_key).
    std::atomic<HandledMessages::Clock::rep> key_check_until{0};
    HandOffs hand_offs;  // of its messages, by any replica (Fencing::hand_offs)
  };

  // A look at the stream for messages a partition's consumer passed over, asked for by the first
  // message handled after the consumer changed and made on checker_: no message waits for its
  // stream lookups (a message held past ack_wait is handed to another replica, which goes on to
  // the key's next one).
  struct PassedOverCheck {
    int partition = 0;
    uint64_t seq = 0;  // the delivery that asked: messages stored before it are looked at
    std::string stream;
    std::string consumer;
  };

  void run();  // the probe, then the partitions start
  // Fencing::downstream_failing: while any partition holds a message for the downstream (one
  // downstream serves them all), every partition steps back (ConsumerSubscription::step_back),
  // so its next messages go to other replicas instead of waiting here for the outage. Chaos
  // seed 3302: one replica's 8.5 s sink outage held 12 of the 16 partitions, each taken by its
  // next delivery there.
  void downstream_failing(int partition, bool failing);
  // Fencing::peers_well: a peer's notice of a message it handled came within 2 x ack_wait, or
  // a peer answers that it is well() (asked on floor_subject_ at most every ack_wait / 2, the
  // answers awaited kFloorWindow at most: a peer idle because the held message's partition
  // waits behind it hands nothing, and says nothing, otherwise). Peers whose downstream failed
  // too are not well, so a message is not handed round among replicas that all wait for one
  // downstream: at most once to each that had not tried it yet.
  bool peers_well();
  // Whether this replica takes messages and its downstream works: not stepped back, and it
  // answered (any verdict but retry) since its downstream last failed.
  bool well() const;
  // Fencing::handed_off: recorded, and told on hand_off_subject_.
  void handed_off(int partition, const Message& message);
  // Fencing::hand_offs: by this replica and by the peers it heard.
  uint64_t hand_offs(int partition, const Message& message) const;
  // The partition's consumer changed, or the stream's leader did: the next message handled in it
  // queues a check of the stream for messages passed over since shortly before (`why`, logged).
  void mark_for_check(int partition, std::string_view why);
  // checker_, every info_interval: a new stream leader can leave a partition's consumer reading
  // a copy that lacks messages the old leader stored (chaos seed 2902: two messages acked after
  // the stream had not answered publishes for 6 s were never delivered, and no consumer change
  // set off a check).
  void watch_stream_leader();
  // Before a delivery of the partition is handled: the messages its consumer passed over that
  // are older than it, handled first while this replica holds the partition (at most one
  // message of a partition is in flight), unless a later message of their key came first.
  // A retry of one of them (its downstream is down), or a failed look at the stream for the next
  // of its key, is the delivery's retry too.
  std::optional<Disposition> settle_owed(int partition, const Message& message);
  Disposition handle(int partition, const Message& message);
  // The partition a message's subject names (the broker's mapping put it there), or
  // `delivered_by` when the subject names none.
  int home_partition(const Message& message, int delivered_by) const;
  // The stream's next message of `message`'s key (the same subject), none when there is none yet;
  // read with a timeout of at most a quarter of ack_wait (it is asked on the message path).
  Result<std::optional<Message>> next_of_key(const Message& message);
  void check_loop();  // checker_: catches up and makes the queued checks, one at a time
  // This replica may have missed peers' notices (its link came back, or a partition's consumer
  // changed: a new leader can deliver again what was handled while this replica did not hear).
  // checker_ asks every live replica for all it remembers; meanwhile, a message not known as
  // handled waits for the answers before it is handled.
  void request_catch_up();
  void catch_up();
  // In before_admit(): a message not known as handled waits (2 x kFloorWindow at most) while
  // a catch-up runs, before its delivery is checked as still this replica's.
  void wait_for_catch_up(const Message& message);
  // Fencing::before_admit, for a delivery not known as handled: the catch-up wait, then
  // owe_passed_over_before(), then owe_passed_over_of_key() while the partition's key check
  // window is open. A look that failed (it could not read the stream: `error`) holds the
  // delivery: a message passed over in what it could not read would otherwise come after it
  // (chaos seed 3501 on nats-server 2.9.10: the stream answered no read for 17 s while consumers
  // whose copies differed passed three messages over, and the deliveries after them went on).
  // Redeliveries look too: the replica whose look failed may have handed the message on, or died.
  std::optional<std::string> before_admit(int partition, const Message& message);
  std::string hold_unread(int partition, const Message& message, const std::string& error);
  // Before a first delivery is checked as still this replica's and handled: the partition's
  // stored messages between the newest one known as handled before it and it that no replica is
  // known to have handled are owed, so they are handled before it. One stream lookup when
  // nothing was passed over. nats-server 2.10 passes messages over with no change of consumer
  // or stream leader to be seen (chaos seed 3102 under node partitions: consecutive consumer
  // sequences around each), so no check set off by a change finds them in time.
  // True when more earlier messages are unknown than a consumer passes over (none are owed).
  // `unread`: why the look could not read the stream (empty when it could).
  bool owe_passed_over_before(int partition, const Message& message, std::string& unread);
  // Drops from `found` the delivery itself: a server whose copy of the stream is numbered
  // differently stores it under another sequence (the same stored time), and the stream leader's
  // copy shows it before the delivery's (chaos seed 3201 on nats-server 2.9.10: 1,104 messages
  // handled twice so, each after asking the peers).
  static void drop_the_delivery_itself(std::vector<Message>& found, const Message& delivery);
  // How a walk along the stream (stream_walk) ended: at its end, or cut short (then `error`
  // says why for a lookup that failed).
  struct WalkEnd {
    enum class How { complete, failed, out_of_time, stopping } how = How::complete;
    std::string error;
    bool cut_short() const { return how != How::complete; }
  };
  // passed_over()'s source: the next message on `filter` stored in `stream` after a sequence,
  // one lookup each (its delivery names `consumer`). A lookup that fails, `deadline` passed or
  // shutdown end the walk with what it found, and `end` says which. `api`, `stream` and `filter`
  // must outlive the walk.
  NextStored stream_walk(nats::JetStreamApi& api, const std::string& stream,
                         const std::string& filter, const std::string& consumer,
                         Clock::time_point deadline, WalkEnd& end) const;
  // One look along the stream: the messages on `filter` stored between `after` and `seq` that
  // no replica is known to have handled (in stream order, `limit` lookups at most), with what
  // the walk saw handled per key (KeyProgress::take_moved_on) and how it ended. Each lookup
  // waits `timeout` at most; the walk stops at `deadline`.
  struct Look {
    std::vector<Message> unknown;
    KeyProgress progress;
    WalkEnd end;
  };
  Look look(uint64_t after, uint64_t seq, const std::string& stream, const std::string& filter,
            const std::string& consumer, Clock::time_point deadline,
            std::chrono::milliseconds timeout, int limit);
  // Drops from `unknown` what peers' notices tell of, waiting kNoticeGrace at most for them.
  void wait_for_notices(std::vector<Message>& unknown);
  // Finds the partition's stored messages since shortly before its consumer changed that no
  // replica is known to have handled, after asking the live replicas about them, and owes them:
  // settle_owed() handles them with the partition's next delivery.
  void find_passed_over(const PassedOverCheck& check);
  // The stream sequence after which the partition's records can judge a message passed over:
  // the newest handled before check_since, not below the oldest remembered nor below what was
  // heard since the link came back. 0: nothing can be judged.
  uint64_t judged_after(const Partition& part) const;
  // Drops from `unknown` what the partition owes already: found by an earlier look, it is not put
  // to the peers again (each question waits kFloorWindow for their answers).
  void drop_owed(int partition, std::vector<Message>& unknown) const;
  // Owes `m`, which the partition's consumer passed over (`seq`: the delivery that found it):
  // settle_owed() handles it with the partition's next delivery. Reported instead when too many
  // are owed already.
  void owe(int partition, const Message& m, uint64_t seq, const std::string& stream);
  // While the partition's check window is open (its consumer changed lately), before a first
  // delivery is checked as still this replica's and handled: the earlier messages of its key since
  // judged_after() that no replica is known to have handled are owed, so they are handled before
  // it. The check of the whole partition runs beside the deliveries and can come after the key's
  // next message is handled (chaos seed 3102, nats-server 2.10.27: one was handled 6 s after the
  // message before it of its key was passed over, 12 s before the check found it).
  // `unread`: why the look could not read the stream (empty when it could).
  void owe_passed_over_of_key(int partition, const Message& message, std::string& unread);
  // Of `candidates`, the stored times that some live replica remembers as handled: each answers
  // on floor_subject_ from what it handled and heard (its notices may not have reached here).
  std::set<int64_t> handled_by_peers(int partition, const std::vector<Message>& candidates);
  // Drops from `unknown` (and remembers as handled) what a live replica says it handled.
  void drop_handled_by_peers(int partition, std::vector<Message>& unknown);
  // The handler's verdict, remembered and told to the other replicas.
  void handled(int partition, const Message& message, const Disposition& outcome);
  // A message reported instead of handled (the next of its key came first): settled for good.
  void settled_unhandled(int partition, const Message& message);
  // Whether a message was handled, looked up in every partition: a consumer whose copy of the
  // stream differs can deliver a message under another partition's consumer.
  std::optional<Handler> handled_anywhere(const Message& message) const;
  // The highest stream sequence this and every other live replica handled in `partition`: each
  // answers on floor_subject_ (see Fencing::fleet_floor) with known_floor().
  uint64_t fleet_floor(int partition);
  // The highest stream sequence this replica knows as handled in `partition`: by it, or by a peer
  // (its notices, or the catch-up). Not only its own: the replicas alive when a partition's
  // consumer goes missing may all have restarted since it was last handled (chaos seed 3102 on
  // nats-server 2.10.27: answering 0, they recreated it from the stream's start, and 1,432
  // messages were handled again after the next of their keys).
  uint64_t known_floor(int partition) const;

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
  std::atomic<uint64_t> step_backs_{0};

  mutable std::mutex
      step_mu_;  // downstream_failing()'s state, and the order of its step_back calls
  std::vector<bool> failing_;
  int failing_count_ = 0;
  bool stepped_back_ = false;
  Clock::time_point stepped_back_at_{};
  // When the connection last came back (steady clock ticks): peers' notices sent while it was
  // down were not heard, so what they handled then cannot be judged (see find_passed_over).
  std::atomic<HandledMessages::Clock::rep> reconnected_at_{0};

  // Questions to the live replicas: "<partition>" asks the highest stream sequence each handled
  // there (fleet_floor), "<partition> <stored ns> ..." which of those messages each knows as
  // handled (handled_by_peers), "well" which of them are well() (peers_well).
  const std::string floor_subject_;
  std::unique_ptr<nats::Subscription> floor_answers_;
  const std::string handled_subject_;  // "<partition> <seq> <stored ns>" notices
  std::unique_ptr<nats::Subscription> handled_notices_;
  // When a peer's notice last came (steady clock ticks; 0: never).
  std::atomic<HandledMessages::Clock::rep> peer_handled_at_{0};
  // Since downstream_failing() was last told of a failure, no handler here answered.
  std::atomic<bool> failed_since_answer_{false};
  std::mutex well_mu_;  // one peers_well() question at a time; the last answer
  Clock::time_point well_asked_{};
  bool peers_were_well_ = false;
  const uint64_t replica_;              // tells this replica's hand-off notices from its peers'
  const std::string hand_off_subject_;  // "<replica> <partition> <seq> <stored ns>" notices
  std::unique_ptr<nats::Subscription> hand_off_notices_;
  std::mutex notice_mu_;
  std::condition_variable noticed_;  // a peer's notice was heard

  std::thread thread_;
  std::thread checker_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<PassedOverCheck> checks_;      // at most one per partition (Partition::check)
  std::vector<std::vector<Message>> owed_;  // per partition, in stream order (settle_owed)
  std::string stream_leader_;               // as watch_stream_leader() last saw it
  bool catch_up_wanted_ = false;
  std::atomic<bool> catching_up_{false};  // from request_catch_up() until the answers are in
  std::condition_variable caught_up_;
  bool stopping_ = false;
  bool connected_ = false;
  bool started_partitions_ = false;
  std::string fatal_;  // the probe's verdict, once fatal
};

}  // namespace natsfleet::fleet
