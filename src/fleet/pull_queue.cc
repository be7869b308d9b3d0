#include "fleet/pull_queue.h"

#include <algorithm>

#include "fleet/delivery_control.h"

namespace natsfleet {

void PullQueue::set_unheld(const Message& message) {
  if (message.control_) message.control_->set_with_application(false);
}

bool PullQueue::take(const Message& message) {
  return !message.control_ || message.control_->take_for_application();
}

void PullQueue::watch(std::stop_token stopping) {
  if (!stopping.stop_possible()) return;
  // Runs close() at once when the stop was requested already.
  std::call_once(watched_, [&] {
    on_stop_.emplace(std::move(stopping), [this] { close(); });
    watching_.store(true, std::memory_order_release);
  });
}

bool PullQueue::put(const Message& message) {
  set_unheld(message);
  watch(message.stop_token());
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return closed_ || waiting_.size() < capacity_; });
  if (closed_) return false;
  waiting_.push_back(message);
  changed_.notify_all();
  return true;
}

Result<std::vector<Message>> PullQueue::fetch(size_t n, std::chrono::milliseconds max_wait) {
  n = std::min(n, capacity_);
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, max_wait, [&] { return closed_ || waiting_.size() >= n; });
  if (closed_)
    return Result<std::vector<Message>>(Errc::shutting_down,
                                        "fetch: the pull work has stopped; what was not fetched "
                                        "went back to the broker");
  std::vector<Message> out;
  out.reserve(std::min(n, waiting_.size()));
  while (out.size() < n && !waiting_.empty()) {
    // One that waited past keep_alive_limit went back to the broker: skipped.
    if (take(waiting_.front())) out.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  changed_.notify_all();
  return out;
}

bool PullQueue::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

void PullQueue::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  changed_.notify_all();
}

}  // namespace natsfleet
