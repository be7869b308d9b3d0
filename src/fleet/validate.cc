#include "natsfleet/validate.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/subject_match.h"
#include "fleet/ordered/partition_plan.h"

namespace natsfleet {
namespace {

// What is wrong with a value (invalid_argument, in words): the checks below chain these.
Result<void> invalid(std::string problem) {
  return Result<void>(Errc::invalid_argument, std::move(problem));
}

Result<void> subject_valid(std::string_view subject, bool allow_wildcards = true) {
  if (subject.empty()) return invalid("subject is empty");
  size_t start = 0;
  for (;;) {
    size_t dot = subject.find('.', start);
    std::string_view token =
        subject.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (token.empty()) return invalid("subject '" + std::string(subject) + "' has an empty token");
    for (char c : token)
      if (std::isspace(static_cast<unsigned char>(c)))
        return invalid("subject '" + std::string(subject) + "' contains whitespace");
    const bool last = dot == std::string_view::npos;
    if (token.find_first_of("*>") != std::string_view::npos) {
      if (!allow_wildcards) return invalid("subject '" + std::string(subject) + "' has a wildcard");
      if (token != "*" && token != ">")
        return invalid("subject '" + std::string(subject) + "': a wildcard must be a whole token");
      if (token == ">" && !last)
        return invalid("subject '" + std::string(subject) + "': '>' must be the last token");
    }
    if (last) return {};
    start = dot + 1;
  }
}

// True when a message published to `subject` (no wildcards) is matched by `pattern`.
bool matches(std::string_view pattern, std::string_view subject) {
  for (;;) {
    const size_t pdot = pattern.find('.');
    const size_t sdot = subject.find('.');
    const std::string_view ptoken = pattern.substr(0, pdot);
    if (ptoken == ">") return true;
    if (ptoken != "*" && ptoken != subject.substr(0, sdot)) return false;
    if (pdot == std::string_view::npos || sdot == std::string_view::npos)
      return pdot == std::string_view::npos && sdot == std::string_view::npos;
    pattern.remove_prefix(pdot + 1);
    subject.remove_prefix(sdot + 1);
  }
}

// "250ms", "30s", "1h": how a range reads in an error. Durations here are whole milliseconds.
std::string words(std::chrono::milliseconds d) {
  const std::int64_t ms = d.count();
  if (ms % 3'600'000 == 0 && ms != 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0 && ms != 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1'000 == 0) return std::to_string(ms / 1'000) + "s";
  return std::to_string(ms) + "ms";
}

Result<void> in_range(std::string_view field, long long value, long long min, long long max) {
  if (value >= min && value <= max) return {};
  return invalid(std::string(field) + " must be between " + std::to_string(min) + " and " +
                 std::to_string(max) + ", got " + std::to_string(value));
}

Result<void> in_range(std::string_view field, std::chrono::milliseconds value,
                      std::chrono::milliseconds min, std::chrono::milliseconds max) {
  if (value >= min && value <= max) return {};
  if (value < min) return invalid(std::string(field) + " must be at least " + words(min));
  return invalid(std::string(field) + " must be at most " + words(max) + ", got " + words(value));
}

Result<void> name_valid(std::string_view name) {
  if (name.empty()) return invalid("name is empty");
  for (char c : name)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '.' || c == '*' || c == '>' ||
        c == '/' || c == '\\')
      return invalid("name '" + std::string(name) +
                     "' may not contain whitespace, '.', '*', '>', '/' or '\\'");
  return {};
}

// True when some subject matches both patterns.
bool overlap(std::string_view a, std::string_view b) {
  for (;;) {
    const size_t adot = a.find('.'), bdot = b.find('.');
    const auto at = a.substr(0, adot), bt = b.substr(0, bdot);
    if (at == ">" || bt == ">") return true;
    if (at != "*" && bt != "*" && at != bt) return false;
    const bool a_last = adot == std::string_view::npos, b_last = bdot == std::string_view::npos;
    if (a_last || b_last) return a_last && b_last;
    a.remove_prefix(adot + 1);
    b.remove_prefix(bdot + 1);
  }
}

Result<void> filter_valid(const WorkSpec& spec) {
  if (spec.subjects.empty()) return subject_valid(spec.subject);
  if (!spec.subject.empty() && spec.subject != spec.subjects.front())
    return invalid("subject '" + spec.subject + "' and subjects are both set: set one of them");
  for (size_t i = 0; i < spec.subjects.size(); ++i) {
    if (auto bad = subject_valid(spec.subjects[i]); !bad)
      return invalid("subjects: " + bad.error().message);
    for (size_t j = 0; j < i; ++j)
      if (overlap(spec.subjects[j], spec.subjects[i]))
        return invalid("subjects '" + spec.subjects[j] + "' and '" + spec.subjects[i] +
                       "' overlap: a consumer's filter subjects must not");
  }
  if (spec.subjects.size() > 1 && spec.per_key)
    return invalid("ordering = per-key takes one subject, not several");
  return {};
}

// How many messages a work takes at once and how often each may be delivered.
Result<void> work_flow_valid(const WorkSpec& spec) {
  using L = Limits;
  if (auto bad = in_range("concurrency", spec.flow.concurrency, 1, L::kMaxConcurrency); !bad)
    return bad;
  if (auto bad = in_range("max_ack_pending", spec.flow.max_ack_pending, 1, L::kMaxAckPending); !bad)
    return bad;
  if (spec.flow.max_ack_pending < spec.flow.concurrency)
    return invalid("max_ack_pending is below concurrency: some handlers could never get work");
  if (spec.failure.max_deliver == 0 || spec.failure.max_deliver < -1)
    return invalid("max_deliver must be -1 or at least 1");
  if (spec.failure.max_deliver > L::kMaxDeliver)
    return invalid("max_deliver must be -1 (unlimited) or between 1 and " +
                   std::to_string(L::kMaxDeliver) + ", got " +
                   std::to_string(spec.failure.max_deliver));
  return in_range("batch", spec.flow.batch, 0, L::kMaxBatch);
}

// A work's timings: ack_wait, heartbeat, keep-alive, pull expiry, nak and retry backoffs.
Result<void> work_timing_valid(const WorkSpec& spec) {
  using L = Limits;
  using std::chrono::milliseconds;
  if (auto bad = in_range("ack_wait", spec.flow.ack_wait, L::kMinAckWait, L::kMaxAckWait); !bad)
    return bad;
  if (spec.flow.heartbeat != milliseconds(0)) {
    if (auto bad = in_range("heartbeat", spec.flow.heartbeat, L::kMinHeartbeat, L::kMaxHeartbeat);
        !bad)
      return bad;
    if (spec.flow.heartbeat * 4 > spec.flow.ack_wait)
      return invalid("heartbeat " + words(spec.flow.heartbeat) +
                     " is more than a quarter of ack_wait " + words(spec.flow.ack_wait) +
                     ": two missed heartbeats must be noticed well within ack_wait (leave it 0 "
                     "for a quarter of ack_wait, at most 5s)");
  }
  if (auto bad =
          in_range("keep_alive_limit", spec.flow.keep_alive_limit, milliseconds(0), L::kMaxBackoff);
      !bad)
    return bad;
  if (auto bad =
          in_range("pull_expires", spec.flow.pull_expires, L::kMinPullExpires, L::kMaxPullExpires);
      !bad)
    return bad;
  if (auto bad = in_range("nak_backoff_min", spec.failure.nak_backoff_min, milliseconds(0),
                          L::kMaxBackoff);
      !bad)
    return bad;
  if (auto bad = in_range("nak_backoff_max", spec.failure.nak_backoff_max, milliseconds(0),
                          L::kMaxBackoff);
      !bad)
    return bad;
  if (spec.failure.nak_backoff_max < spec.failure.nak_backoff_min)
    return invalid("nak_backoff_max is below nak_backoff_min");
  if (spec.failure.retry_min < std::chrono::milliseconds(1))
    return invalid("retry_min must be positive");
  if (auto bad = in_range("retry_min", spec.failure.retry_min, milliseconds(1), L::kMaxBackoff);
      !bad)
    return bad;
  if (auto bad = in_range("retry_max", spec.failure.retry_max, milliseconds(1), L::kMaxBackoff);
      !bad)
    return bad;
  if (spec.failure.retry_max < spec.failure.retry_min)
    return invalid("retry_max is below retry_min");
  return {};
}

// Per-key order's plan, shape and lease.
Result<void> work_ordering_valid(const WorkSpec& spec) {
  if (!spec.per_key) return {};
  const PerKeyOrder& order = *spec.per_key;
  const auto& subject = spec.subjects.empty() ? spec.subject : spec.subjects.front();
  if (auto plan = fleet::PartitionPlan::make(subject, order.key_token, order.partitions); !plan)
    return invalid(plan.error().message);
  if (spec.shape != WorkShape::pull) return invalid("ordering = per-key needs the pull shape");
  return in_range("lease", order.lease, Limits::kMinLease, Limits::kMaxLease);
}

// A dead-letter subject is published to (no wildcards) and not consumed by the work itself.
Result<void> dead_letter_valid(const WorkSpec& spec) {
  if (spec.failure.dead_letter.empty()) return {};
  if (auto bad = subject_valid(spec.failure.dead_letter, /*allow_wildcards=*/false); !bad)
    return invalid("dead_letter " + bad.error().message +
                   ": it is where messages are published, so it has no wildcards");
  // Its own dead letters would come back to the work that gave up on them, for ever.
  for (const auto& subject : spec.subjects.empty() ? std::vector{spec.subject} : spec.subjects)
    if (matches(subject, spec.failure.dead_letter))
      return invalid("dead_letter '" + spec.failure.dead_letter +
                     "' is matched by the work's own subject '" + subject +
                     "': its dead letters would be consumed again");
  return {};
}

// The stream a work declares: named as `stream` (if set), holding the work's subjects, with
// limits the broker accepts.
Result<void> declared_stream_valid(const WorkSpec& spec) {
  if (!spec.declared_stream) return {};
  const StreamSpec& declared = *spec.declared_stream;
  auto bad_field = [](std::string_view field, const Result<void>& bad) {
    return invalid("declared_stream." + std::string(field) + ": " + bad.error().message);
  };
  if (auto bad = name_valid(declared.name); !bad) return bad_field("name", bad);
  if (!spec.stream.empty() && spec.stream != declared.name)
    return invalid("stream '" + spec.stream + "' is not the declared stream '" + declared.name +
                   "': leave stream empty or name the same one");
  if (spec.per_key)
    return invalid(
        "declared_stream is not available with ordering = per-key: its stream holds the "
        "partitioned subjects (docs/tutorial/library.md, ordered work); create it beforehand");
  for (const auto& subject : declared.subjects)
    if (auto bad = subject_valid(subject); !bad) return bad_field("subjects", bad);
  if (!declared.subjects.empty())
    for (const auto& filter : spec.subjects.empty() ? std::vector{spec.subject} : spec.subjects)
      if (std::none_of(declared.subjects.begin(), declared.subjects.end(),
                       [&](const std::string& held) { return base::subject_within(filter, held); }))
        return invalid("declared_stream.subjects do not hold the work's subject '" + filter + "'");
  using L = Limits;
  if (auto bad = in_range("declared_stream.replicas", declared.replicas, 1, L::kMaxReplicas); !bad)
    return bad;
  if (auto bad = in_range("declared_stream.max_age", declared.max_age, std::chrono::milliseconds(0),
                          L::kMaxStreamMaxAge);
      !bad)
    return bad;
  if (declared.max_bytes == 0 || declared.max_bytes < -1)
    return invalid("declared_stream.max_bytes must be -1 (no limit) or positive");
  if (declared.max_msgs == 0 || declared.max_msgs < -1)
    return invalid("declared_stream.max_msgs must be -1 (no limit) or positive");
  if (auto bad = in_range("declared_stream.duplicate_window", declared.duplicate_window,
                          std::chrono::milliseconds(0), L::kMaxStreamMaxAge);
      !bad)
    return bad;
  if (declared.max_age.count() != 0 && declared.duplicate_window > declared.max_age)
    return invalid("declared_stream.duplicate_window is longer than its max_age");
  return {};
}

Result<void> work_valid(const WorkSpec& spec) {
  if (auto bad = name_valid(spec.name); !bad) return bad;
  if (auto bad = filter_valid(spec); !bad) return bad;
  if (!spec.stream.empty())
    if (auto bad = name_valid(spec.stream); !bad) return invalid("stream " + bad.error().message);
  if (auto bad = work_flow_valid(spec); !bad) return bad;
  if (auto bad = work_timing_valid(spec); !bad) return bad;
  if (auto bad = work_ordering_valid(spec); !bad) return bad;
  if (auto bad = declared_stream_valid(spec); !bad) return bad;
  return dead_letter_valid(spec);
}

Result<void> broadcast_valid(const BroadcastSpec& spec) {
  using L = Limits;
  if (auto bad = name_valid(spec.name); !bad) return bad;
  if (auto bad = subject_valid(spec.subject); !bad) return bad;
  if (auto bad = in_range("concurrency", spec.concurrency, 1, L::kMaxConcurrency); !bad) return bad;
  if (auto bad = in_range("max_queued", spec.max_queued, 1, L::kMaxQueued); !bad) return bad;
  if (auto bad = in_range("key_token", spec.key_token, 0, L::kMaxKeyToken); !bad) return bad;
  if (spec.source == BroadcastSource::core &&
      (!spec.stream.empty() || spec.create_stream || spec.start_with_last_per_subject))
    return invalid(
        "stream, create_stream and start_with_last_per_subject apply to source = jetstream only");
  if (spec.source == BroadcastSource::jetstream && spec.key_token != 0)
    return invalid("key_token applies to source = core only: a jetstream broadcast queues nothing");
  if (spec.source == BroadcastSource::jetstream) {
    if (!spec.stream.empty())
      if (auto bad = name_valid(spec.stream); !bad) return invalid("stream " + bad.error().message);
    if (auto bad = in_range("heartbeat", spec.heartbeat, L::kMinHeartbeat, L::kMaxHeartbeat); !bad)
      return bad;
    if (spec.create_stream && spec.stream.empty())
      return invalid("create_stream needs a stream name");
    if (spec.create_stream)
      if (auto bad = in_range("stream_max_age", spec.stream_max_age, L::kMinStreamMaxAge,
                              L::kMaxStreamMaxAge);
          !bad)
        return bad;
  }
  return {};
}

}  // namespace

Result<void> check_subject(std::string_view subject, bool allow_wildcards) {
  return subject_valid(subject, allow_wildcards);
}

Result<void> check_name(std::string_view name) { return name_valid(name); }

Result<void> validate_work(const WorkSpec& spec) { return work_valid(spec); }

Result<void> validate_broadcast(const BroadcastSpec& spec) { return broadcast_valid(spec); }

std::string subject_token(std::string_view subject, int token) {
  size_t start = 0;
  for (int i = 1; i < token; ++i) {
    start = subject.find('.', start);
    if (start == std::string_view::npos) return {};
    ++start;
  }
  const size_t end = subject.find('.', start);
  return std::string(
      subject.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
}

}  // namespace natsfleet
