#include "natsfleet/validate.h"

#include <cctype>

namespace natsfleet {

std::string check_subject(std::string_view subject, bool allow_wildcards) {
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

namespace {

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

}  // namespace

std::string check_name(std::string_view name) {
  if (name.empty()) return "name is empty";
  for (char c : name)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '.' || c == '*' || c == '>' ||
        c == '/' || c == '\\')
      return "name '" + std::string(name) +
             "' may not contain whitespace, '.', '*', '>', '/' or '\\'";
  return {};
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

std::string validate_work(const WorkSpec& spec) {
  if (auto bad = check_name(spec.name); !bad.empty()) return bad;
  if (auto bad = check_subject(spec.subject); !bad.empty()) return bad;
  if (!spec.stream.empty())
    if (auto bad = check_name(spec.stream); !bad.empty()) return "stream " + bad;
  if (spec.concurrency < 1) return "concurrency must be at least 1";
  if (spec.max_ack_pending < 1) return "max_ack_pending must be at least 1";
  if (spec.max_ack_pending < spec.concurrency)
    return "max_ack_pending is below concurrency: some handlers could never get work";
  if (spec.max_deliver == 0 || spec.max_deliver < -1) return "max_deliver must be -1 or at least 1";
  if (spec.ack_wait < std::chrono::milliseconds(100)) return "ack_wait must be at least 100ms";
  if (spec.keep_alive_limit < std::chrono::milliseconds(0))
    return "keep_alive_limit cannot be negative";
  if (spec.heartbeat < std::chrono::milliseconds(50)) return "heartbeat must be at least 50ms";
  if (spec.batch < 0) return "batch cannot be negative";
  if (spec.nak_backoff_max < spec.nak_backoff_min)
    return "nak_backoff_max is below nak_backoff_min";
  if (spec.retry_min < std::chrono::milliseconds(1)) return "retry_min must be positive";
  if (spec.retry_max < spec.retry_min) return "retry_max is below retry_min";
  if (!spec.dead_letter.empty()) {
    if (auto bad = check_subject(spec.dead_letter, /*allow_wildcards=*/false); !bad.empty())
      return "dead_letter " + bad + ": it is where messages are published, so it has no wildcards";
    // Its own dead letters would come back to the work that gave up on them, for ever.
    if (matches(spec.subject, spec.dead_letter))
      return "dead_letter '" + spec.dead_letter + "' is matched by the work's own subject '" +
             spec.subject + "': its dead letters would be consumed again";
  }
  return {};
}

std::string validate_broadcast(const BroadcastSpec& spec) {
  if (auto bad = check_name(spec.name); !bad.empty()) return bad;
  if (auto bad = check_subject(spec.subject); !bad.empty()) return bad;
  if (spec.concurrency < 1) return "concurrency must be at least 1";
  if (spec.max_queued < 1) return "max_queued must be at least 1";
  if (spec.key_token < 0) return "key_token cannot be negative";
  if (spec.source == BroadcastSource::jetstream) {
    if (!spec.stream.empty())
      if (auto bad = check_name(spec.stream); !bad.empty()) return "stream " + bad;
    if (spec.heartbeat < std::chrono::milliseconds(50)) return "heartbeat must be at least 50ms";
    if (spec.create_stream && spec.stream.empty()) return "create_stream needs a stream name";
    if (spec.create_stream && spec.stream_max_age < std::chrono::seconds(1))
      return "stream_max_age must be at least 1s";
  }
  return {};
}

}  // namespace natsfleet
