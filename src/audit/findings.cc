#include "audit/findings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "base/duration.h"
#include "base/subject_match.h"
#include "fleet/consumer_shape.h"
#include "fleet/ordered/lease_store.h"
#include "fleet/ordered/partition_plan.h"
#include "fleet/stream_declaration.h"

namespace natsfleet::audit {
namespace {

using nats::ConsumerInfo;

// A consumer as the first snapshot saw it and as the second one sees it.
struct Sampled {
  const ConsumerInfo& before;
  const ConsumerInfo& now;
};

Finding finding(const ConsumerInfo& c, const char* rule, std::string evidence, std::string action) {
  return {c.stream, c.name, rule, std::move(evidence), std::move(action)};
}

bool is_durable(const ConsumerInfo& c) { return !c.config.durable_name.empty(); }

// Every delivery, redeliveries included (the consumer sequence).
uint64_t deliveries(const ConsumerInfo& c) { return c.delivered_consumer_seq; }

int64_t max_ack_pending(const ConsumerInfo& c) { return c.config.max_ack_pending; }

bool at_ack_limit(const ConsumerInfo& c) {
  const int64_t limit = max_ack_pending(c);
  return limit > 0 && c.num_ack_pending >= static_cast<uint64_t>(limit);
}

// Nobody takes messages from it in either snapshot: no pull request waiting, or no subscriber.
bool unbound(const Sampled& c) {
  if (c.now.is_pull()) return c.before.num_waiting == 0 && c.now.num_waiting == 0;
  return !c.before.push_bound && !c.now.push_bound;
}

bool storming(const ConsumerInfo& c, const StormThresholds& storm) {
  return c.num_redelivered >= storm.min_redelivered &&
         static_cast<double>(c.num_redelivered) >=
             storm.min_share * static_cast<double>(c.num_ack_pending);
}

// The shape natsfleet gives a successor it creates; none for a plain push durable, which
// natsfleet never creates.
std::optional<WorkShape> successor_shape(const ConsumerInfo& c) {
  if (c.is_pull()) return WorkShape::pull;
  if (!c.config.deliver_group.empty()) return WorkShape::push_queue;
  return std::nullopt;
}

// The consumer a migration created to replace `c` (same stream, the deterministic name), if any.
const ConsumerInfo* successor_of(const ConsumerInfo& c, const BrokerSnapshot& snapshot) {
  for (const ConsumerInfo* d : snapshot.consumers_of(c.stream)) {
    const auto shape = successor_shape(*d);
    if (d == &c || !shape) continue;
    if (d->name ==
        fleet::successor_name(c.name, c.stream, fleet::filter_subjects(d->config), *shape))
      return d;
  }
  return nullptr;
}

std::string nobody(const ConsumerInfo& c) { return c.is_pull() ? "nobody pulls" : "no subscriber"; }

std::optional<Finding> predecessor_left(const Sampled& c, const ConsumerInfo& successor) {
  if (!unbound(c)) return std::nullopt;  // a replica of an older release still consumes it
  return finding(
      c.now, "predecessor-left",
      fmt::format("successor '{}' exists; {}; {} pending, {} unacked", successor.name,
                  nobody(c.now), c.now.num_pending, c.now.num_ack_pending),
      // The command first, so that a wrapped cell still shows it whole.
      fmt::format("nats consumer rm {} {} (safe; a running natsfleet replica retires it itself "
                  "once unbound for its grace period)",
                  c.now.stream, c.now.name));
}

std::optional<Finding> unbound_push(const Sampled& c) {
  const ConsumerInfo& now = c.now;
  if (now.is_pull() || !unbound(c) || now.num_pending + now.num_ack_pending == 0)
    return std::nullopt;
  return finding(now, "unbound-push",
                 fmt::format("delivers to '{}' with no subscriber; {} pending, {} unacked",
                             now.config.deliver_subject, now.num_pending, now.num_ack_pending),
                 "bind a queue subscriber, move the work to natsfleet (pull or push-queue), or "
                 "delete it");
}

std::optional<Finding> idle_pull(const Sampled& c, const std::string& over) {
  const ConsumerInfo& now = c.now;
  // At max_ack_pending nobody could get more, pulling or not: that is `stalled`.
  const bool idle = now.is_pull() && is_durable(now) && unbound(c) && c.before.num_pending > 0 &&
                    now.num_pending > 0 && !at_ack_limit(now) &&
                    c.before.delivered_stream_seq == now.delivered_stream_seq &&
                    c.before.ack_floor_stream_seq == now.ack_floor_stream_seq;
  if (!idle) return std::nullopt;
  const std::string what =
      fmt::format("{} pending, no pull waiting; delivered seq {} and ack floor {} unchanged {}",
                  now.num_pending, now.delivered_stream_seq, now.ack_floor_stream_seq, over);
  // Its metadata (server 2.10) says which natsfleet work made it: the operator knows what to run.
  if (auto work = now.config.metadata.find(fleet::kWorkMetadataKey);
      work != now.config.metadata.end())
    return finding(now, "idle-pull",
                   what + "; natsfleet created it for work '" + work->second + "'",
                   "no replica of work '" + work->second +
                       "' runs: start one (natsfleet run with that [[work]]), or delete the "
                       "consumer if the work is gone");
  return finding(
      now, "idle-pull", what,
      "no replica pulls: start one (natsfleet run), or delete the consumer if its work is gone");
}

std::optional<Finding> stalled(const Sampled& c, const std::string& over) {
  const ConsumerInfo& now = c.now;
  if (!at_ack_limit(c.before) || !at_ack_limit(now) ||
      c.before.ack_floor_stream_seq != now.ack_floor_stream_seq)
    return std::nullopt;
  const std::string what =
      fmt::format("{} unacked, max_ack_pending {}; ack floor {} unchanged {}", now.num_ack_pending,
                  max_ack_pending(now), now.ack_floor_stream_seq, over);
  return finding(
      now, "stalled", what,
      "nothing more is delivered until acks arrive: find the replica holding these messages "
      "(they return after ack_wait) or raise max_ack_pending");
}

std::optional<Finding> redelivery_storm(const Sampled& c, const StormThresholds& storm) {
  const ConsumerInfo& now = c.now;
  if (!storming(c.before, storm) || !storming(now, storm)) return std::nullopt;
  return finding(now, "redelivery-storm",
                 fmt::format("{} of {} unacked messages delivered more than once; {} deliveries "
                             "up to stream seq {}",
                             now.num_redelivered, now.num_ack_pending, deliveries(now),
                             now.delivered_stream_seq),
                 "handlers fail or outlast ack_wait: look at their errors, give ack_wait more "
                 "than the handling time");
}

// The stream whose subjects hold `subject`, nullptr when none does. The broker refuses streams
// with overlapping subjects, so at most one does.
const nats::StreamInfo* stream_holding(const std::string& subject, const BrokerSnapshot& snapshot) {
  for (const auto& stream : snapshot.streams)
    if (base::subject_within_any(subject, stream.subjects)) return &stream;
  return nullptr;
}

void judge_work(const config::WorkConfig& work, const std::string& where,
                const BrokerSnapshot& snapshot, std::vector<Finding>& out);

// Per-key ordered work: a stream holds the partitioned subjects, the lease bucket exists, and
// each partition has its owner's reader consumer (fleet/ordered/partition_reader.h).
void judge_ordered_work(const config::WorkConfig& work, const std::string& where,
                        const BrokerSnapshot& snapshot, std::vector<Finding>& out) {
  const WorkSpec& spec = work.spec;
  auto plan = fleet::PartitionPlan::of(spec);
  if (!plan) return;  // the config was checked when it was read
  const nats::StreamInfo* stream = stream_holding(plan->stored_subjects(), snapshot);
  if (!stream) {
    out.push_back({"", spec.name, "work-no-stream",
                   fmt::format("{}: per-key order stores subject '{}' as '{}', and no stream "
                               "holds that",
                               where, spec.subject, plan->stored_subjects()),
                   fmt::format("create a stream holding '{}', and map the subject on the broker: "
                               "mappings {{ {} }}",
                               plan->stored_subjects(), plan->mapping_line())});
    return;
  }
  const std::string bucket = fleet::lease_bucket(spec.name);
  const bool has_bucket =
      std::any_of(snapshot.streams.begin(), snapshot.streams.end(),
                  [&](const nats::StreamInfo& s) { return s.name == "KV_" + bucket; });
  std::vector<int> unread;
  for (int p = 0; p < plan->partitions(); ++p) {
    const std::string prefix = fleet::partition_consumer(spec.name, p);
    const auto consumers = snapshot.consumers_of(stream->name);
    if (std::none_of(consumers.begin(), consumers.end(), [&](const nats::ConsumerInfo* c) {
          return c->name == prefix || c->name.starts_with(prefix + "-e");
        }))
      unread.push_back(p);
  }
  if (!has_bucket || static_cast<int>(unread.size()) == plan->partitions()) {
    out.push_back({stream->name, spec.name, "work-missing",
                   fmt::format("{}: {}none of its {} partitions has a reader ({}-p<n>-e<epoch>...) "
                               "on stream '{}'",
                               where, has_bucket ? "" : "no lease bucket " + bucket + ", and ",
                               plan->partitions(), spec.name, stream->name),
                   "natsfleet run makes them when it starts"});
    return;
  }
  if (!unread.empty())
    out.push_back({stream->name, spec.name, "work-missing",
                   fmt::format("{}: partitions {} have no reader consumer on stream '{}'", where,
                               fmt::join(unread, ", "), stream->name),
                   "a partition's owner makes its reader when it takes the lease: if this "
                   "lasts longer than the lease, no replica runs the work"});
}

void judge_work(const config::WorkConfig& work, const std::string& where,
                const BrokerSnapshot& snapshot, std::vector<Finding>& out) {
  const WorkSpec& spec = work.spec;
  if (spec.per_key) return judge_ordered_work(work, where, snapshot, out);
  const nats::StreamInfo* stream = stream_holding(spec.subject, snapshot);
  if (!stream && spec.declared_stream) {
    out.push_back({"", spec.name, "work-no-stream",
                   fmt::format("{}: no stream holds subject '{}'; the work declares stream '{}'",
                               where, spec.subject, spec.declared_stream->name),
                   "natsfleet run creates the declared stream when it starts"});
    return;
  }
  if (!stream) {
    out.push_back({"", spec.name, "work-no-stream",
                   fmt::format("{}: no stream holds subject '{}'", where, spec.subject),
                   "create a stream for the subject; natsfleet run waits until one exists"});
    return;
  }
  if (spec.declared_stream && spec.declared_stream->name == stream->name)
    if (auto differences = fleet::stream_differences(*spec.declared_stream, stream->config);
        !differences.empty())
      out.push_back(
          {stream->name, spec.name, "stream-differs",
           fmt::format("{}: stream '{}' differs from the work's declaration: {}", where,
                       stream->name, fmt::join(differences, "; ")),
           fmt::format("natsfleet never changes an existing stream: edit it (nats stream edit {}) "
                       "or the declaration",
                       stream->name)});
  // One consumer reads one stream: every filter subject must be in the first one's.
  for (size_t i = 1; i < spec.subjects.size(); ++i) {
    const std::string& subject = spec.subjects[i];
    if (base::subject_within_any(subject, stream->subjects)) continue;
    const nats::StreamInfo* other = stream_holding(subject, snapshot);
    out.push_back(
        {stream->name, spec.name, other ? "work-wrong-stream" : "work-no-stream",
         other ? fmt::format("{}: subject '{}' is in stream '{}', subject '{}' in stream '{}': "
                             "one consumer reads one stream",
                             where, spec.subject, stream->name, subject, other->name)
               : fmt::format("{}: stream '{}' holds subject '{}', but no stream holds '{}'", where,
                             stream->name, spec.subject, subject),
         fmt::format("add '{}' to stream '{}'{}", subject, stream->name,
                     other ? ", or split the work in two: one per stream" : "")});
  }
  if (!spec.stream.empty() && spec.stream != stream->name)
    out.push_back(
        {stream->name, spec.name, "work-wrong-stream",
         fmt::format("{}: stream = '{}', but subject '{}' is in stream '{}'", where, spec.stream,
                     spec.subject, stream->name),
         fmt::format("set stream = \"{}\" or leave it out: the subject decides", stream->name)});

  const ConsumerInfo* consumer = snapshot.find(stream->name, spec.name);
  const std::string successor_name =
      fleet::successor_name(spec.name, stream->name, fleet::filter_subjects(spec), spec.shape);
  const ConsumerInfo* successor = snapshot.find(stream->name, successor_name);
  if (!consumer) {
    if (!successor)
      out.push_back(
          {stream->name, spec.name, "work-missing",
           fmt::format("{}: no consumer '{}' on stream '{}'", where, spec.name, stream->name),
           "natsfleet run creates it when it starts"});
    return;
  }
  const fleet::ShapeCheck check = fleet::check_shape(spec, consumer->config);
  if (check.compatible) return;
  if (successor && fleet::check_shape(spec, successor->config).compatible) return;  // migrated
  out.push_back({stream->name, spec.name, "work-wrong-shape",
                 fmt::format("{}: '{}' {}", where, spec.name, check.problem),
                 fmt::format("natsfleet run creates '{}' after this one's ack floor and retires "
                             "this one once nobody is bound to it",
                             successor_name)});
}

}  // namespace

std::vector<Finding> consumer_findings(const BrokerSnapshot& first, const BrokerSnapshot& second,
                                       std::chrono::milliseconds interval,
                                       const StormThresholds& storm) {
  const std::string over = "over " + base::format_duration(interval);
  std::vector<Finding> out;
  for (const ConsumerInfo& now : second.consumers) {
    const ConsumerInfo* before = first.find(now.stream, now.name);
    if (!before) continue;  // created between the snapshots: nothing to compare yet
    const Sampled c{*before, now};
    // A predecessor is judged as one only: its pending messages are its successor's work now.
    const ConsumerInfo* successor = successor_of(now, second);
    const auto found = successor ? std::vector{predecessor_left(c, *successor)}
                                 : std::vector{unbound_push(c), idle_pull(c, over),
                                               stalled(c, over), redelivery_storm(c, storm)};
    for (const auto& f : found)
      if (f) out.push_back(*f);
  }
  return out;
}

std::vector<Finding> dead_letter_findings(const config::DaemonConfig& config,
                                          const BrokerSnapshot& first,
                                          const BrokerSnapshot& second) {
  std::vector<Finding> out;
  for (const config::WorkConfig& work : config.work) {
    const WorkSpec& spec = work.spec;
    if (spec.failure.dead_letter.empty()) continue;
    const std::string where = fmt::format("{}:{}", config.file, work.line);
    const nats::StreamInfo* stream = stream_holding(spec.failure.dead_letter, second);
    if (!stream) {
      out.push_back(
          {"", spec.name, "dead-letter-stream-missing",
           fmt::format("{}: no stream holds dead_letter subject '{}'", where,
                       spec.failure.dead_letter),
           fmt::format("create a stream holding '{}' (nats stream add): natsfleet run does not "
                       "bind the work without one",
                       spec.failure.dead_letter)});
      continue;
    }
    const auto now = second.subject_messages.find(spec.failure.dead_letter);
    if (now == second.subject_messages.end() || now->second == 0) continue;
    const auto before = first.subject_messages.find(spec.failure.dead_letter);
    const bool growing = before != first.subject_messages.end() && now->second > before->second;
    out.push_back(
        {stream->name, spec.name, "dead-letters",
         fmt::format(
             "{}: '{}' holds {} dead letter{} of work '{}'{}", where, spec.failure.dead_letter,
             now->second, now->second == 1 ? "" : "s", spec.name,
             growing ? fmt::format(", growing ({} at the first sample)", before->second) : ""),
         fmt::format("natsfleet dead-letters list --config {} --subject {} shows why; fix the "
                     "cause, then replay them (or purge)",
                     config.file, spec.failure.dead_letter)});
  }
  return out;
}

std::vector<Finding> work_findings(const config::DaemonConfig& config,
                                   const BrokerSnapshot& snapshot) {
  std::vector<Finding> out;
  for (const config::WorkConfig& work : config.work)
    judge_work(work, fmt::format("{}:{}", config.file, work.line), snapshot, out);
  return out;
}

}  // namespace natsfleet::audit
