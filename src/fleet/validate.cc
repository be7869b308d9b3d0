#include "natsfleet/validate.h"

#include <cctype>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fleet/ordered/partition_plan.h"

namespace natsfleet {
namespace {

// What is wrong with a value, or "" when nothing is: the checks below chain these.
std::string subject_problem(std::string_view subject, bool allow_wildcards = true) {
  if (subject.empty()) return "subject is empty";
  size_t start = 0;
  for (;;) {
    size_t dot = subject.find('.', start);
    std::string_view token =
        subject.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (token.empty()) return "subject '" + std::string(subject) + "' has an empty token";
    for (char c : token)
      if (std::isspace(static_cast<unsigned char>(c)))
        return "subject '" + std::string(subject) + "' contains whitespace";
    const bool last = dot == std::string_view::npos;
    if (token.find_first_of("*>") != std::string_view::npos) {
      if (!allow_wildcards) return "subject '" + std::string(subject) + "' has a wildcard";
      if (token != "*" && token != ">")
        return "subject '" + std::string(subject) + "': a wildcard must be a whole token";
      if (token == ">" && !last)
        return "subject '" + std::string(subject) + "': '>' must be the last token";
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

std::string out_of_range(std::string_view field, long long value, long long min, long long max) {
  if (value >= min && value <= max) return {};
  return std::string(field) + " must be between " + std::to_string(min) + " and " +
         std::to_string(max) + ", got " + std::to_string(value);
}

std::string out_of_range(std::string_view field, std::chrono::milliseconds value,
                         std::chrono::milliseconds min, std::chrono::milliseconds max) {
  if (value >= min && value <= max) return {};
  if (value < min) return std::string(field) + " must be at least " + words(min);
  return std::string(field) + " must be at most " + words(max) + ", got " + words(value);
}

std::string name_problem(std::string_view name) {
  if (name.empty()) return "name is empty";
  for (char c : name)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '.' || c == '*' || c == '>' ||
        c == '/' || c == '\\')
      return "name '" + std::string(name) +
             "' may not contain whitespace, '.', '*', '>', '/' or '\\'";
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

std::string filter_problem(const WorkSpec& spec) {
  if (spec.subjects.empty()) return subject_problem(spec.subject);
  if (!spec.subject.empty() && spec.subject != spec.subjects.front())
    return "subject '" + spec.subject + "' and subjects are both set: set one of them";
  for (size_t i = 0; i < spec.subjects.size(); ++i) {
    if (auto bad = subject_problem(spec.subjects[i]); !bad.empty()) return "subjects: " + bad;
    for (size_t j = 0; j < i; ++j)
      if (overlap(spec.subjects[j], spec.subjects[i]))
        return "subjects '" + spec.subjects[j] + "' and '" + spec.subjects[i] +
               "' overlap: a consumer's filter subjects must not";
  }
  if (spec.subjects.size() > 1 && spec.ordering == Ordering::per_key)
    return "ordering = per-key takes one subject, not several";
  return {};
}

std::string work_problem(const WorkSpec& spec) {
  using L = Limits;
  using std::chrono::milliseconds;
  if (auto bad = name_problem(spec.name); !bad.empty()) return bad;
  if (auto bad = filter_problem(spec); !bad.empty()) return bad;
  if (!spec.stream.empty())
    if (auto bad = name_problem(spec.stream); !bad.empty()) return "stream " + bad;
  if (spec.concurrency < 1) return "concurrency must be at least 1";
  if (auto bad = out_of_range("concurrency", spec.concurrency, 1, L::kMaxConcurrency); !bad.empty())
    return bad;
  if (spec.max_ack_pending < 1) return "max_ack_pending must be at least 1";
  if (auto bad = out_of_range("max_ack_pending", spec.max_ack_pending, 1, L::kMaxAckPending);
      !bad.empty())
    return bad;
  if (spec.max_ack_pending < spec.concurrency)
    return "max_ack_pending is below concurrency: some handlers could never get work";
  if (spec.max_deliver == 0 || spec.max_deliver < -1) return "max_deliver must be -1 or at least 1";
  if (spec.max_deliver > L::kMaxDeliver)
    return "max_deliver must be -1 (unlimited) or between 1 and " + std::to_string(L::kMaxDeliver) +
           ", got " + std::to_string(spec.max_deliver);
  if (auto bad = out_of_range("ack_wait", spec.ack_wait, L::kMinAckWait, L::kMaxAckWait);
      !bad.empty())
    return bad;
  if (auto bad = out_of_range("heartbeat", spec.heartbeat, L::kMinHeartbeat, L::kMaxHeartbeat);
      !bad.empty())
    return bad;
  if (auto bad =
          out_of_range("keep_alive_limit", spec.keep_alive_limit, milliseconds(0), L::kMaxBackoff);
      !bad.empty())
    return bad;
  if (spec.batch < 0) return "batch cannot be negative";
  if (auto bad = out_of_range("batch", spec.batch, 0, L::kMaxBatch); !bad.empty()) return bad;
  if (auto bad =
          out_of_range("pull_expires", spec.pull_expires, L::kMinPullExpires, L::kMaxPullExpires);
      !bad.empty())
    return bad;
  if (auto bad =
          out_of_range("nak_backoff_min", spec.nak_backoff_min, milliseconds(0), L::kMaxBackoff);
      !bad.empty())
    return bad;
  if (auto bad =
          out_of_range("nak_backoff_max", spec.nak_backoff_max, milliseconds(0), L::kMaxBackoff);
      !bad.empty())
    return bad;
  if (spec.nak_backoff_max < spec.nak_backoff_min)
    return "nak_backoff_max is below nak_backoff_min";
  if (spec.retry_min < std::chrono::milliseconds(1)) return "retry_min must be positive";
  if (auto bad = out_of_range("retry_min", spec.retry_min, milliseconds(1), L::kMaxBackoff);
      !bad.empty())
    return bad;
  if (auto bad = out_of_range("retry_max", spec.retry_max, milliseconds(1), L::kMaxBackoff);
      !bad.empty())
    return bad;
  if (spec.retry_max < spec.retry_min) return "retry_max is below retry_min";
  if (spec.ordering == Ordering::per_key) {
    const auto& subject = spec.subjects.empty() ? spec.subject : spec.subjects.front();
    if (auto plan = fleet::PartitionPlan::make(subject, spec.key_token, spec.partitions); !plan)
      return plan.error().message;
    if (spec.shape != WorkShape::pull) return "ordering = per-key needs the pull shape";
    if (auto bad = out_of_range("lease", spec.lease, L::kMinLease, L::kMaxLease); !bad.empty())
      return bad;
  } else if (spec.key_token != 0) {
    return "key_token applies to ordering = per-key only";
  }
  if (!spec.dead_letter.empty()) {
    if (auto bad = subject_problem(spec.dead_letter, /*allow_wildcards=*/false); !bad.empty())
      return "dead_letter " + bad + ": it is where messages are published, so it has no wildcards";
    // Its own dead letters would come back to the work that gave up on them, for ever.
    for (const auto& subject : spec.subjects.empty() ? std::vector{spec.subject} : spec.subjects)
      if (matches(subject, spec.dead_letter))
        return "dead_letter '" + spec.dead_letter + "' is matched by the work's own subject '" +
               subject + "': its dead letters would be consumed again";
  }
  return {};
}

std::string broadcast_problem(const BroadcastSpec& spec) {
  using L = Limits;
  if (auto bad = name_problem(spec.name); !bad.empty()) return bad;
  if (auto bad = subject_problem(spec.subject); !bad.empty()) return bad;
  if (spec.concurrency < 1) return "concurrency must be at least 1";
  if (auto bad = out_of_range("concurrency", spec.concurrency, 1, L::kMaxConcurrency); !bad.empty())
    return bad;
  if (spec.max_queued < 1) return "max_queued must be at least 1";
  if (auto bad = out_of_range("max_queued", spec.max_queued, 1, L::kMaxQueued); !bad.empty())
    return bad;
  if (spec.key_token < 0) return "key_token cannot be negative";
  if (auto bad = out_of_range("key_token", spec.key_token, 0, L::kMaxKeyToken); !bad.empty())
    return bad;
  if (spec.source == BroadcastSource::jetstream) {
    if (!spec.stream.empty())
      if (auto bad = name_problem(spec.stream); !bad.empty()) return "stream " + bad;
    if (auto bad = out_of_range("heartbeat", spec.heartbeat, L::kMinHeartbeat, L::kMaxHeartbeat);
        !bad.empty())
      return bad;
    if (spec.create_stream && spec.stream.empty()) return "create_stream needs a stream name";
    if (spec.create_stream)
      if (auto bad = out_of_range("stream_max_age", spec.stream_max_age, L::kMinStreamMaxAge,
                                  L::kMaxStreamMaxAge);
          !bad.empty())
        return bad;
  }
  return {};
}

Result<void> verdict(std::string problem) {
  if (problem.empty()) return {};
  return Result<void>(Errc::invalid_argument, std::move(problem));
}

}  // namespace

Result<void> check_subject(std::string_view subject, bool allow_wildcards) {
  return verdict(subject_problem(subject, allow_wildcards));
}

Result<void> check_name(std::string_view name) { return verdict(name_problem(name)); }

Result<void> validate_work(const WorkSpec& spec) { return verdict(work_problem(spec)); }

Result<void> validate_broadcast(const BroadcastSpec& spec) {
  return verdict(broadcast_problem(spec));
}

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
