// A JetStream consumer's configuration and state as typed values. The broker speaks JSON; only
// src/nats translates (nats/jetstream_api.cc), so every layer above reads fields, not keys.
//
//   ConsumerConfig c;
//   c.durable_name = "jobs";
//   c.ack_wait = std::chrono::seconds(30);
//   c.filter_subject = "jobs.>";
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace natsfleet::nats {

enum class DeliverPolicy {
  all,
  last,
  new_messages,
  by_start_sequence,
  by_start_time,
  last_per_subject
};
enum class AckPolicy { none, all, explicit_ack };
enum class ReplayPolicy { instant, original };

// The broker's names ("all", "new", "by_start_sequence", "explicit", "instant", ...).
const char* to_string(DeliverPolicy policy);
const char* to_string(AckPolicy policy);
const char* to_string(ReplayPolicy policy);

// A zero or empty field is absent on the wire, so the broker applies its default (as its own
// answers omit such fields).
struct ConsumerConfig {
  std::string durable_name;  // a durable; empty for an ephemeral
  std::string name;          // an ephemeral's chosen name (server 2.9 and later)
  std::string description;
  DeliverPolicy deliver_policy = DeliverPolicy::all;
  uint64_t opt_start_seq = 0;  // with DeliverPolicy::by_start_sequence
  AckPolicy ack_policy = AckPolicy::explicit_ack;
  std::chrono::nanoseconds ack_wait{0};
  int64_t max_deliver = 0;  // -1: unlimited
  std::string filter_subject;
  // Several filter subjects (server 2.10 and later; 2.9 ignores the field and filters nothing).
  std::vector<std::string> filter_subjects;
  ReplayPolicy replay_policy = ReplayPolicy::instant;
  int64_t max_waiting = 0;      // pull requests the broker queues (pull consumers only)
  int64_t max_ack_pending = 0;  // -1: unlimited
  std::string deliver_subject;  // set: a push consumer
  std::string deliver_group;
  std::chrono::nanoseconds idle_heartbeat{0};
  bool flow_control = false;
  std::chrono::nanoseconds inactive_threshold{0};
  // Free-form labels (server 2.10 and later; 2.9 ignores the field). natsfleet marks the
  // consumers it creates with the work or broadcast they serve (see consumer_shape.h).
  std::map<std::string, std::string> metadata;
  // Fields natsfleet does not model (backoff, sample_freq, num_replicas, ...), each
  // key's JSON text as the broker sent it: an update in place sends them back unchanged.
  std::map<std::string, std::string> other_fields;

  bool is_pull() const { return deliver_subject.empty(); }
  // The durable's name, or the ephemeral's.
  const std::string& consumer_name() const { return durable_name.empty() ? name : durable_name; }
  bool operator==(const ConsumerConfig&) const = default;
};

struct ConsumerInfo {
  std::string stream;
  std::string name;
  ConsumerConfig config;
  uint64_t num_pending = 0;      // not yet delivered
  uint64_t num_ack_pending = 0;  // delivered, not yet acked
  uint64_t num_redelivered = 0;
  uint64_t num_waiting = 0;  // pull requests waiting
  uint64_t delivered_stream_seq = 0;
  uint64_t delivered_consumer_seq = 0;  // every delivery, redeliveries included
  uint64_t ack_floor_stream_seq = 0;
  // When the leader last delivered a message ("delivered.last_active") and when it gathered this
  // answer ("ts", nats-server 2.10 on), both by the broker's clock, in ns since the Unix epoch; 0
  // when absent (a leader that has delivered nothing since it took over, an older broker).
  int64_t last_delivery_ns = 0;
  int64_t gathered_ns = 0;
  bool push_bound = false;
  std::string leader;   // the consumer's cluster leader; empty on a single server
  std::string created;  // when the consumer was made, as the broker wrote it

  bool is_pull() const { return config.is_pull(); }
  // How long before this answer was gathered the leader last delivered, by the broker's clock
  // alone (no clocks compared); none unless the answer says both.
  std::optional<std::chrono::nanoseconds> since_last_delivery() const {
    if (last_delivery_ns == 0 || gathered_ns == 0) return std::nullopt;
    return std::chrono::nanoseconds(std::max<int64_t>(gathered_ns - last_delivery_ns, 0));
  }
};

}  // namespace natsfleet::nats
