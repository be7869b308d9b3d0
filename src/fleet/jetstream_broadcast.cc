#include "fleet/jetstream_broadcast.h"

#include <algorithm>

#include "fleet/consumer_subscription.h"

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;

// A JetStream broadcast is the work of one replica: its own consumer, each message handled here
// and acked once the handler returns (a throw naks it for another try).
WorkSpec replica_work_spec(const BroadcastSpec& spec) {
  WorkSpec work;
  work.name = spec.name;
  work.subject = spec.subject;
  work.stream = spec.stream;
  work.flow.concurrency = spec.concurrency;
  work.flow.heartbeat = spec.heartbeat;
  work.start = StartAt::new_messages;
  work.failure.missing_consumer = OnMissing::recreate;
  work.flow.max_ack_pending = std::max(work.flow.max_ack_pending, spec.concurrency);
  return work;
}

ReplicaOptions replica_options(const BroadcastSpec& spec) {
  ReplicaOptions options;
  options.last_per_subject = spec.start_with_last_per_subject;
  if (spec.source != BroadcastSource::jetstream || !spec.create_stream) return options;
  nats::StreamConfig stream;
  stream.name = spec.stream;
  stream.subjects = {spec.subject};
  stream.storage = nats::StorageType::file;
  stream.retention = nats::RetentionPolicy::limits;
  stream.max_age = spec.stream_max_age;
  stream.duplicate_window = std::min(spec.stream_max_age, milliseconds(120'000));
  stream.num_replicas = 1;
  options.stream_to_create = std::move(stream);
  return options;
}

WorkHandler acking(BroadcastHandler handler) {
  // DownstreamUnavailable passes through: the work subscription holds the message for a retry.
  return [handler = std::move(handler)](const Message& m) {
    handler(m);
    return Disposition::ack();
  };
}

}  // namespace

std::unique_ptr<Supervised> jetstream_broadcast(const BroadcastSpec& spec, BroadcastHandler handler,
                                                FleetContext& context) {
  return std::make_unique<ConsumerSubscription>(replica_work_spec(spec), acking(std::move(handler)),
                                                context, ConsumerSubscription::Scope::per_replica,
                                                replica_options(spec));
}

}  // namespace natsfleet::fleet
