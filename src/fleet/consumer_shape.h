// The consumer a WorkSpec asks for, and how an existing consumer on the broker compares to it:
// compatible as is, compatible after an in-place update of mutable fields, or the wrong shape.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nats/consumer_config.h"
#include "natsfleet/spec.h"

namespace natsfleet::fleet {

// The broker's own max_deliver on every consumer natsfleet makes: unlimited. natsfleet counts
// deliveries itself and terminates (dead-letters) a message on its last rejection; a broker limit
// would drop a message silently when its last delivery is lost to a crash or a shutdown.
inline constexpr int kBrokerMaxDeliver = -1;
// Pull requests the broker queues per consumer: room for every replica's outstanding pulls.
inline constexpr int kMaxWaiting = 512;

// The config to create the shared durable with (deliver policy from spec.start), named `durable`
// (spec.name when empty; a migration names a successor).
nats::ConsumerConfig desired_consumer_config(const WorkSpec& spec, const std::string& durable = {});
// The same consumer, starting at stream sequence `seq` (a recreate or a successor that must
// neither replay acknowledged work nor skip pending work).
nats::ConsumerConfig config_starting_at(const WorkSpec& spec, uint64_t seq,
                                        const std::string& durable = {});
// A replica's own ephemeral pull consumer (a JetStream broadcast), named `name`: from stream
// sequence `start_seq`, or when it is 0 new messages (with `last_per_subject`: first the last
// message of each subject). The broker removes it once nobody has pulled for `inactive`.
// The consumer through which the owner of an ordered work's partition reads it, for one epoch
// (fleet/ordered/partition_reader.h): a pull consumer no one else reads, from `start`, AckAll
// (the checkpoint acks everything below it), never redelivering on its own in practice, on one
// server: made in one step where a replicated one needs a raft group per consumer (a lost one
// is looked up, then made anew).
struct ReaderConsumer {
  std::string name;
  std::string description;
  std::string filter;
  uint64_t start = 1;
  std::string work;
  int partition = 0;
  uint64_t epoch = 0;
  // A work-queue stream: explicit acks only (each message up to the checkpoint is acked) and
  // delivery from its first message (everything acked is gone from it; `start` is unused).
  bool work_queue = false;
};
nats::ConsumerConfig reader_consumer_config(const ReaderConsumer& reader);

nats::ConsumerConfig replica_consumer_config(const WorkSpec& spec, const std::string& name,
                                             uint64_t start_seq, std::chrono::milliseconds inactive,
                                             bool last_per_subject = false);
// The metadata key naming the work (on a shared durable) or the broadcast (on a replica's
// ephemeral) a consumer was created for; servers before 2.10 drop it.
inline constexpr const char* kWorkMetadataKey = "natsfleet.work";
inline constexpr const char* kBroadcastMetadataKey = "natsfleet.broadcast";

// The subjects the spec's consumer filters: `subjects`, or `subject` alone.
std::vector<std::string> filter_subjects(const WorkSpec& spec);
// The subjects a consumer filters (none: every subject of its stream).
std::vector<std::string> filter_subjects(const nats::ConsumerConfig& config);
// Either list in words: "jobs.run", or "orders.created, orders.paid".
std::string describe_subjects(const std::vector<std::string>& subjects);

// Where a push-queue consumer delivers: the same for every replica of the fleet.
std::string deliver_subject_for(const std::string& durable);
// Where the replicas bound to a work's consumer on `stream` answer "I know it" to a replica
// about to create it (ConsumerLifecycle::AskPeers).
std::string peers_subject_for(const std::string& stream, const std::string& work);
// The other question asked there: "did the consumer serve you (a message or a heartbeat) within
// `within`?", answered only by a replica it served (ConsumerWatch::Broker::peer_served).
std::string served_question(std::chrono::milliseconds within);
// The window a served_question() asks about; none for another body (an empty one asks "do you
// know it?").
std::optional<std::chrono::milliseconds> served_window(std::string_view body);

// Where a consumer of this config starts, in words: "the stream's start", "stream sequence 42".
std::string delivers_from(const nats::ConsumerConfig& config);

struct ShapeCheck {
  bool compatible = true;
  std::string problem;  // why not, in an operator's words
  bool needs_update = false;
  nats::ConsumerConfig updated;  // existing config with the mutable fields set as the spec wants
  std::string changes;           // "ack_wait 30s -> 10s, max_deliver 5 -> 3"
};

ShapeCheck check_shape(const WorkSpec& spec, const nats::ConsumerConfig& existing);

// The successor that replaces a consumer of the wrong shape: "<name>-<shape>-<8 hex digits>",
// the digits a hash of the stream, the filter subjects and the shape. Every replica (and
// `natsfleet audit`) computes the same name, so concurrent migrations converge on one consumer.
std::string successor_name(const std::string& name, const std::string& stream,
                           const std::vector<std::string>& subjects, WorkShape shape);

}  // namespace natsfleet::fleet
