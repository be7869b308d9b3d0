// Collects what handlers saw, from any thread, and waits for conditions on it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "natsfleet/message.h"

namespace natsfleet::testing {

class Recorder {
 public:
  // Records one handled message for `replica`.
  void record(const std::string& replica, const Message& m) {
    std::lock_guard lock(mu_);
    ++total_;
    ++per_replica_[replica];
    ++times_seen_[m.data()];
    if (m.delivered() > 1) ++redelivered_;
    cv_.notify_all();
  }

  bool wait_until(const std::function<bool(const Recorder&)>& done,
                  std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return done(*this); });
  }
  bool wait_distinct(size_t n, std::chrono::milliseconds timeout) {
    return wait_until([n](const Recorder& r) { return r.times_seen_.size() >= n; }, timeout);
  }

  // Accessors: call with the lock held (inside wait_until) or after handlers stopped.
  size_t total() const { return total_; }
  size_t distinct() const { return times_seen_.size(); }
  size_t redelivered() const { return redelivered_; }
  size_t of(const std::string& replica) const {
    auto it = per_replica_.find(replica);
    return it == per_replica_.end() ? 0 : it->second;
  }
  size_t duplicates() const {
    size_t d = 0;
    for (const auto& [payload, n] : times_seen_) d += n - 1;
    return d;
  }
  bool saw(const std::string& payload) const { return times_seen_.count(payload) > 0; }

  // Snapshot under the lock, for use while handlers may still run.
  template <typename F>
  auto locked(F&& f) const {
    std::lock_guard lock(mu_);
    return f(*this);
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  size_t total_ = 0;
  size_t redelivered_ = 0;
  std::map<std::string, size_t> per_replica_;
  std::map<std::string, size_t> times_seen_;
};

}  // namespace natsfleet::testing
