#include "fleet/subject_stream_cache.h"

namespace natsfleet::fleet {

Result<bool> SubjectStreamCache::holds(const std::string& subject, const Ask& ask,
                                       Clock::time_point now) {
  {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(subject); it != entries_.end()) {
      Entry& e = it->second;
      const bool settled = e.held && !e.doubted;
      if (settled || now - e.asked < recheck_) return e.held;
      // Due again: concurrent callers keep the cached answer while this one asks.
      e.asked = now;
    }
  }
  auto answer = ask(subject);
  if (!answer) return answer.error();
  std::lock_guard lock(mu_);
  if (entries_.size() >= kMaxSubjects && !entries_.contains(subject)) entries_.clear();
  entries_[subject] = Entry{.held = *answer, .doubted = false, .asked = now};
  return *answer;
}

void SubjectStreamCache::doubt(const std::string& subject) {
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(subject); it != entries_.end()) it->second.doubted = true;
}

}  // namespace natsfleet::fleet
