// Whether a stream holds a subject, as the broker last answered, per subject: a stored publish
// asks it before publishing, because "no responders" to the publish itself does not say it (a
// stream electing a leader, or JetStream starting up, has no responder either).
//
//   SubjectStreamCache cache;
//   auto holds = cache.holds("mail.sent", [&](const std::string& s) { return ask_broker(s); });
//   if (!holds) ...;            // could not tell: retry later
//   else if (!*holds) ...;      // the broker said no stream holds it
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "fleet/supervised.h"
#include "natsfleet/error.h"

namespace natsfleet::fleet {

class SubjectStreamCache {
 public:
  // The broker's answer for one subject: true when a stream holds it, false when it said none
  // does, an error when it did not answer.
  using Ask = std::function<Result<bool>(const std::string& subject)>;

  // How often a subject is asked again when the last answer was "none" (or a publish to it found
  // no responders). Keeps a flood of publishes from flooding the JetStream API.
  static constexpr std::chrono::milliseconds kRecheck{2000};
  // Beyond this many subjects the cache starts afresh (a relay publishes on a subject per member).
  static constexpr size_t kMaxSubjects = 10'000;

  explicit SubjectStreamCache(std::chrono::milliseconds recheck = kRecheck) : recheck_(recheck) {}

  // A positive answer is kept until doubt(); a negative one is trusted for `recheck`, then asked
  // again. An error is never cached. `ask` runs without the lock held, on the caller's thread.
  // Thread-safe.
  Result<bool> holds(const std::string& subject, const Ask& ask, Clock::time_point now);
  Result<bool> holds(const std::string& subject, const Ask& ask) {
    return holds(subject, ask, Clock::now());
  }

  // A publish to `subject` found no responders: the stream may be gone, or only electing a leader.
  // The next holds() after `recheck` since the last answer asks the broker again; until then the
  // cached answer stands.
  void doubt(const std::string& subject);

 private:
  struct Entry {
    bool held = false;
    bool doubted = false;
    Clock::time_point asked;  // when the last answer was asked for
  };

  const std::chrono::milliseconds recheck_;
  std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

}  // namespace natsfleet::fleet
