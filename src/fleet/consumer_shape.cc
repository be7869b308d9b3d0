#include "fleet/consumer_shape.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string_view>

#include "base/fnv_hash.h"
#include "base/parse_number.h"

namespace natsfleet::fleet {
namespace {

int64_t ns(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

std::string describe_ns(int64_t value) {
  if (value % 1'000'000'000 == 0) return std::to_string(value / 1'000'000'000) + "s";
  return std::to_string(value / 1'000'000) + "ms";
}

// Sets the consumer's filter: one subject in filter_subject (which every server knows), several
// in filter_subjects.
void set_filter(nats::ConsumerConfig& c, const WorkSpec& spec) {
  if (spec.subjects.size() > 1)
    c.filter_subjects = spec.subjects;
  else
    c.filter_subject = spec.subjects.empty() ? spec.subject : spec.subjects.front();
}

}  // namespace

std::vector<std::string> filter_subjects(const WorkSpec& spec) {
  return spec.subjects.empty() ? std::vector<std::string>{spec.subject} : spec.subjects;
}

std::vector<std::string> filter_subjects(const nats::ConsumerConfig& config) {
  if (!config.filter_subjects.empty()) return config.filter_subjects;
  if (config.filter_subject.empty()) return {};
  return {config.filter_subject};
}

std::string describe_subjects(const std::vector<std::string>& subjects) {
  if (subjects.empty()) return "every subject";
  std::string out;
  for (const auto& s : subjects) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string successor_name(const std::string& name, const std::string& stream,
                           const std::vector<std::string>& subjects, WorkShape shape) {
  const char* kind = shape == WorkShape::pull ? "pull" : "queue";
  // One subject hashes as it always did, so names made by earlier releases still match.
  std::string filter;
  for (const auto& s : subjects) filter += (filter.empty() ? "" : " ") + s;
  char digits[9];
  std::snprintf(digits, sizeof digits, "%08x",
                base::fnv1a_32(stream + '\n' + filter + '\n' + kind));
  return name + "-" + kind + "-" + digits;
}

std::string delivers_from(const nats::ConsumerConfig& config) {
  switch (config.deliver_policy) {
    case nats::DeliverPolicy::all:
      return "the stream's start";
    case nats::DeliverPolicy::by_start_sequence:
      return "stream sequence " + std::to_string(config.opt_start_seq);
    case nats::DeliverPolicy::new_messages:
      return "new messages";
    default:
      return std::string("deliver policy ") + nats::to_string(config.deliver_policy);
  }
}

std::string deliver_subject_for(const std::string& durable) {
  return "_NATSFLEET.deliver." + durable;
}

std::string peers_subject_for(const std::string& stream, const std::string& work) {
  return "_NATSFLEET.peers." + stream + "." + work;
}

namespace {
constexpr std::string_view kServedWithin = "served-within ";
}

std::string served_question(std::chrono::milliseconds within) {
  return std::string(kServedWithin) + std::to_string(within.count());
}

std::optional<std::chrono::milliseconds> served_window(std::string_view body) {
  if (!body.starts_with(kServedWithin)) return std::nullopt;
  auto ms = base::parse_number<int64_t>(body.substr(kServedWithin.size()));
  if (!ms || *ms < 0) return std::nullopt;
  return std::chrono::milliseconds(*ms);
}

nats::ConsumerConfig desired_consumer_config(const WorkSpec& spec, const std::string& durable) {
  nats::ConsumerConfig c;
  c.durable_name = durable.empty() ? spec.name : durable;
  c.ack_policy = nats::AckPolicy::explicit_ack;
  c.ack_wait = spec.flow.ack_wait;
  c.max_deliver = kBrokerMaxDeliver;
  c.max_ack_pending = spec.flow.max_ack_pending;
  set_filter(c, spec);
  c.metadata[kWorkMetadataKey] = spec.name;
  c.deliver_policy =
      spec.start == StartAt::all ? nats::DeliverPolicy::all : nats::DeliverPolicy::new_messages;
  c.replay_policy = nats::ReplayPolicy::instant;
  if (spec.shape == WorkShape::pull) {
    c.max_waiting = kMaxWaiting;
  } else {
    // Every replica joins the same deliver group: the broker hands each message to one of them.
    c.deliver_subject = deliver_subject_for(c.durable_name);
    c.deliver_group = c.durable_name;
  }
  c.description = spec.description;
  return c;
}

nats::ConsumerConfig config_starting_at(const WorkSpec& spec, uint64_t seq,
                                        const std::string& durable) {
  nats::ConsumerConfig c = desired_consumer_config(spec, durable);
  c.deliver_policy = nats::DeliverPolicy::by_start_sequence;
  c.opt_start_seq = seq;
  return c;
}

nats::ConsumerConfig replica_consumer_config(const WorkSpec& spec, const std::string& name,
                                             uint64_t start_seq, std::chrono::milliseconds inactive,
                                             bool last_per_subject) {
  nats::ConsumerConfig c;
  c.name = name;
  c.ack_policy = nats::AckPolicy::explicit_ack;
  c.ack_wait = spec.flow.ack_wait;
  c.max_deliver = kBrokerMaxDeliver;
  c.max_ack_pending = spec.flow.max_ack_pending;
  set_filter(c, spec);
  c.metadata[kBroadcastMetadataKey] = spec.name;
  c.deliver_policy = start_seq > 0      ? nats::DeliverPolicy::by_start_sequence
                     : last_per_subject ? nats::DeliverPolicy::last_per_subject
                                        : nats::DeliverPolicy::new_messages;
  c.opt_start_seq = start_seq;
  c.replay_policy = nats::ReplayPolicy::instant;
  c.max_waiting = kMaxWaiting;
  c.inactive_threshold = inactive;
  return c;
}

namespace {

// Why a consumer cannot carry this spec's work as it is, or "" when it can (mutable fields aside).
std::string shape_problem(const WorkSpec& spec, const nats::ConsumerConfig& existing) {
  const bool push = !existing.is_pull();
  const bool group = !existing.deliver_group.empty();
  if (spec.shape == WorkShape::pull && push)
    return group ? "is a push consumer with a deliver group; this fleet pulls"
                 : "is a plain push durable, which admits a single subscriber";
  if (spec.shape == WorkShape::push_queue && !push)
    return "is a pull consumer; this fleet shares a push consumer with a deliver group";
  if (spec.shape == WorkShape::push_queue && !group)
    return "is a plain push durable, which admits a single subscriber";
  auto have = filter_subjects(existing);
  auto want = filter_subjects(spec);
  std::sort(have.begin(), have.end());
  std::sort(want.begin(), want.end());
  if (have != want)
    return "filters " + describe_subjects(filter_subjects(existing)) + ", not " +
           describe_subjects(filter_subjects(spec));
  if (existing.ack_policy != nats::AckPolicy::explicit_ack)
    return std::string("has ack policy '") + nats::to_string(existing.ack_policy) +
           "', not explicit";
  // Where a consumer started does not matter once it runs, except for these two, which skip
  // all but the last message(s): a work consumer must not have skipped work.
  if (existing.deliver_policy == nats::DeliverPolicy::last ||
      existing.deliver_policy == nats::DeliverPolicy::last_per_subject)
    return std::string("has deliver policy '") + nats::to_string(existing.deliver_policy) +
           "', which skipped earlier messages";
  if (existing.replay_policy != nats::ReplayPolicy::instant)
    return "replays at the original pace, not as fast as handled";
  return {};
}

}  // namespace

ShapeCheck check_shape(const WorkSpec& spec, const nats::ConsumerConfig& existing) {
  ShapeCheck out;
  out.problem = shape_problem(spec, existing);
  if (!out.problem.empty()) {
    out.compatible = false;
    return out;
  }
  out.updated = existing;
  auto drift = [&](const char* key, const std::string& from, const std::string& to) {
    out.needs_update = true;
    if (!out.changes.empty()) out.changes += ", ";
    out.changes += std::string(key) + " " + from + " -> " + to;
  };
  if (existing.ack_wait != spec.flow.ack_wait) {
    drift("ack_wait", describe_ns(existing.ack_wait.count()), describe_ns(ns(spec.flow.ack_wait)));
    out.updated.ack_wait = spec.flow.ack_wait;
  }
  if (existing.max_deliver != kBrokerMaxDeliver) {
    drift("max_deliver", std::to_string(existing.max_deliver),
          "-1 (natsfleet enforces max_deliver itself)");
    out.updated.max_deliver = kBrokerMaxDeliver;
  }
  if (existing.max_ack_pending != spec.flow.max_ack_pending) {
    drift("max_ack_pending", std::to_string(existing.max_ack_pending),
          std::to_string(spec.flow.max_ack_pending));
    out.updated.max_ack_pending = spec.flow.max_ack_pending;
  }
  if (!spec.description.empty() && existing.description != spec.description) {
    drift("description", existing.description.empty() ? "none" : existing.description,
          spec.description);
    out.updated.description = spec.description;
  }
  return out;
}

nats::ConsumerConfig reader_consumer_config(const ReaderConsumer& reader) {
  nats::ConsumerConfig c;
  c.durable_name = reader.name;
  c.description = reader.description;
  c.deliver_policy =
      reader.work_queue ? nats::DeliverPolicy::all : nats::DeliverPolicy::by_start_sequence;
  if (!reader.work_queue) c.opt_start_seq = std::max<uint64_t>(reader.start, 1);
  c.ack_policy = reader.work_queue ? nats::AckPolicy::explicit_ack : nats::AckPolicy::all;
  // Nobody else reads it, so a redelivery only follows a message held this long (a downstream
  // outage): the reader skips it as known, or reads again after the hole it leaves.
  c.ack_wait = std::chrono::minutes(10);
  c.max_deliver = -1;
  c.filter_subject = reader.filter;
  c.max_ack_pending = -1;
  c.max_waiting = 16;
  c.metadata = {{"natsfleet-work", reader.work},
                {"natsfleet-partition", std::to_string(reader.partition)},
                {"natsfleet-epoch", std::to_string(reader.epoch)}};
  c.other_fields["num_replicas"] = "1";
  return c;
}

}  // namespace natsfleet::fleet
