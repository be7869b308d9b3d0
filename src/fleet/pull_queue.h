// What stands behind natsfleet::PullWork: the messages a pull work's handler took, waiting for the
// application's fetch(). The handler puts each message here and returns Disposition::later(), so
// its verdict is the application's (Message::ack from any thread). A message is marked as not
// held by the application until fetched: a stopping subscription gives those back at once, and
// so does the keep-alive once one has waited past keep_alive_limit (a fetch then skips it).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <vector>

#include "natsfleet/error.h"
#include "natsfleet/message.h"

namespace natsfleet {

class PullQueue {
 public:
  explicit PullQueue(size_t capacity) : capacity_(capacity) {}

  // The handler's part: waits while `capacity` messages wait unfetched; false once the queue is
  // closed (the message is then left for the stopping subscription to give back).
  bool put(const Message& message);
  // Up to n (at most capacity) messages, once n wait or max_wait passed; each is then held by
  // the application. shutting_down once closed.
  Result<std::vector<Message>> fetch(size_t n, std::chrono::milliseconds max_wait);
  // No more puts or fetches; what waits stays for the subscription to give back. Idempotent.
  void close();
  bool closed() const;
  // The delivering subscription's stop closes this queue: true once a message was put.
  bool watching() const { return watching_.load(std::memory_order_acquire); }
  size_t capacity() const { return capacity_; }

 private:
  // Closes the queue once `stopping` (the delivering subscription's) is requested.
  void watch(std::stop_token stopping);
  // Marks `message` as not held by the application (DeliveryControl::with_application).
  static void set_unheld(const Message& message);
  // Hands `message` to the application; false when it was given back meanwhile.
  static bool take(const Message& message);

  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Message> waiting_;
  bool closed_ = false;
  std::once_flag watched_;
  std::atomic<bool> watching_{false};
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
};

}  // namespace natsfleet
