// Sizes a subscription's pull window from what its handlers are measured to take: the window
// holds what this replica's handlers finish in half of ack_wait, so the last message in it
// starts well within ack_wait. Large for fast handlers (throughput), small for slow ones (a
// message waits little before its handler starts); never below concurrency, never over
// max_ack_pending, kMaxWindow messages or kMaxWindowBytes of messages of the average size seen.
// A spec with a fixed batch is never resized. Safe to call from every handler thread at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace natsfleet::fleet {

class FlowTuner {
 public:
  static constexpr int kMaxWindow = 1000;
  static constexpr int64_t kMaxWindowBytes = 32 * 1024 * 1024;

  // `batch` > 0: the window is fixed at that.
  FlowTuner(int batch, int concurrency, int max_ack_pending, std::chrono::milliseconds ack_wait);

  // The window to pull with: the last one measured, else a small first one, so slow handlers
  // never sit on a large buffer before they are measured.
  int window() const;
  // A handler took `handler_time` (its queue included) on a message of `bytes`: the new window
  // when it changes, else nothing. Slow handlers are measured at once; fast ones every 32nd
  // message, which costs nothing.
  std::optional<int> observe(std::chrono::steady_clock::duration handler_time, size_t bytes);

 private:
  const int batch_;
  const int concurrency_;
  const int max_ack_pending_;
  const int64_t ack_wait_ns_;
  // Averages of recent handler times and payload sizes (races between handler threads only
  // blur them).
  std::atomic<int64_t> handler_ns_avg_{0};
  std::atomic<int64_t> bytes_avg_{0};
  std::atomic<uint64_t> observed_{0};
  std::atomic<int> window_{0};  // the last window set (0: none yet)
};

}  // namespace natsfleet::fleet
