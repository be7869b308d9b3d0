// Checks on names, subjects and specs, shared by the library (start-up) and the daemon's config.
// Each succeeds when the value is fine, else fails with Errc::invalid_argument and a message
// saying what is wrong with it.
//
//   if (auto checked = natsfleet::validate_work(spec); !checked)
//     std::cerr << checked.error().message << "\n";
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "natsfleet/error.h"
#include "natsfleet/export.h"
#include "natsfleet/spec.h"

namespace natsfleet {

// The range of every number in a WorkSpec and a BroadcastSpec: validate_work and
// validate_broadcast refuse a value outside it, naming the field and the range. Each bound keeps
// a value meaningful (a thread per concurrent handler, a duration the broker's nanosecond fields
// hold) and far beyond any sensible use; the daemon's config reference lists the same ranges.
struct NATSFLEET_API Limits {
  static constexpr int kMaxConcurrency = 1024;  // a thread each
  static constexpr int kMaxAckPending = 1'000'000;
  static constexpr int kMaxDeliver = 1'000'000;  // or -1: unlimited
  static constexpr int kMaxBatch = 10'000;
  static constexpr int kMaxQueued = 1'000'000;
  static constexpr int kMaxKeyToken = 256;     // a subject has fewer tokens than that
  static constexpr int kMaxPartitions = 1024;  // a lease key and, owned, a consumer each
  static constexpr int kMaxReplicas = 5;       // a stream's, as the broker allows
  // Ordered work's lease: long enough for a lease round trip to the broker, short enough for a
  // handover an operator would wait for.
  static constexpr std::chrono::milliseconds kMinLease{1000};
  static constexpr std::chrono::milliseconds kMaxLease{10 * 60 * 1000};
  static constexpr std::chrono::milliseconds kMinAckWait{200};  // four of the shortest heartbeat
  static constexpr std::chrono::milliseconds kMaxAckWait = std::chrono::hours(24);
  static constexpr std::chrono::milliseconds kMinHeartbeat{50};
  static constexpr std::chrono::milliseconds kMaxHeartbeat = std::chrono::minutes(1);
  static constexpr std::chrono::milliseconds kMinPullExpires{100};
  static constexpr std::chrono::milliseconds kMaxPullExpires = std::chrono::minutes(10);
  static constexpr std::chrono::milliseconds kMaxBackoff = std::chrono::hours(24);  // nak, retry
  static constexpr std::chrono::milliseconds kMinStreamMaxAge = std::chrono::seconds(1);
  static constexpr std::chrono::milliseconds kMaxStreamMaxAge = std::chrono::hours(24 * 3650);
};

// The functions below read only their arguments: any thread, at any time, no broker needed.

// A NATS subject: dot-separated non-empty tokens, no whitespace; `*` a whole token and `>` the
// last token, when wildcards are allowed.
[[nodiscard]] NATSFLEET_API Result<void> check_subject(std::string_view subject,
                                                       bool allow_wildcards = true);
// A consumer or stream name: non-empty, no whitespace, '.', '*', '>', '/' or '\'.
[[nodiscard]] NATSFLEET_API Result<void> check_name(std::string_view name);
[[nodiscard]] NATSFLEET_API Result<void> validate_work(const WorkSpec& spec);
[[nodiscard]] NATSFLEET_API Result<void> validate_broadcast(const BroadcastSpec& spec);
// The `token`-th (1-based) dot-separated token of a subject, or "" when it has fewer.
NATSFLEET_API std::string subject_token(std::string_view subject, int token);

}  // namespace natsfleet
