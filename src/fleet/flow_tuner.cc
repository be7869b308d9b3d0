#include "fleet/flow_tuner.h"

#include <algorithm>

namespace natsfleet::fleet {

FlowTuner::FlowTuner(int batch, int concurrency, int max_ack_pending,
                     std::chrono::milliseconds ack_wait)
    : batch_(batch),
      concurrency_(std::max(concurrency, 1)),
      max_ack_pending_(max_ack_pending),
      ack_wait_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(ack_wait).count()) {}

int FlowTuner::window() const {
  if (batch_ > 0) return batch_;
  if (const int measured = window_.load(std::memory_order_relaxed); measured > 0) return measured;
  return std::min({concurrency_ * 4, kMaxWindow, max_ack_pending_});
}

std::optional<int> FlowTuner::observe(std::chrono::steady_clock::duration handler_time,
                                      size_t bytes) {
  if (batch_ > 0) return std::nullopt;
  const auto size = static_cast<int64_t>(bytes);
  const int64_t bytes_avg = bytes_avg_.load(std::memory_order_relaxed);
  const int64_t bytes_next = bytes_avg == 0 ? size : bytes_avg + (size - bytes_avg) / 8;
  bytes_avg_.store(bytes_next, std::memory_order_relaxed);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(handler_time).count();
  const int64_t avg = handler_ns_avg_.load(std::memory_order_relaxed);
  const int64_t next = avg == 0 ? ns : avg + (ns - avg) / 8;
  handler_ns_avg_.store(next, std::memory_order_relaxed);
  // Slow handlers resize at once: the first few measured must shrink the first window before
  // what it holds waits long.
  const bool slow = next > ack_wait_ns_ / 64;
  if (observed_.fetch_add(1, std::memory_order_relaxed) % 32 != 31 && !slow) return std::nullopt;
  const int64_t fits = ack_wait_ns_ / 2 * concurrency_ / std::max<int64_t>(next, 1);
  const int64_t most = std::min<int64_t>(
      {kMaxWindow, max_ack_pending_, kMaxWindowBytes / std::max<int64_t>(bytes_next, 1)});
  const int window = static_cast<int>(
      std::clamp<int64_t>(fits, concurrency_, std::max<int64_t>(most, concurrency_)));
  if (window_.exchange(window, std::memory_order_relaxed) == window) return std::nullopt;
  return window;
}

}  // namespace natsfleet::fleet
