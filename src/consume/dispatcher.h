// Runs handlers for one subscription on a fixed number of threads ("concurrency"), in arrival
// order per thread. Shutdown lets running handlers finish up to a deadline and hands whatever
// was queued but never started back to the caller (to nak it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "nats/connection.h"

namespace natsfleet::consume {

class Dispatcher {
 public:
  using Process = std::function<void(nats::InboundMessage&&)>;
  using Reject = std::function<void(nats::InboundMessage&&)>;

  Dispatcher(int concurrency, Process process);
  // Stops with a zero deadline if still running.
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Queues a message. After stop() the message is handed back, for the caller to nak.
  std::optional<nats::InboundMessage> submit(nats::InboundMessage&& msg);
  // Refuses new work, rejects the queue, waits for running handlers until `deadline`.
  // Returns false when some handler was still running at the deadline (its thread is left to
  // finish on its own).
  bool stop(std::chrono::milliseconds deadline, const Reject& reject);
  size_t queued() const;

 private:
  struct State {
    std::mutex mu;
    std::condition_variable work_ready;
    std::condition_variable idle;
    std::deque<nats::InboundMessage> queue;
    int running = 0;
    int waiting = 0;  // idle workers: a submit wakes one only when someone waits
    bool stopping = false;
    Process process;
  };
  static void worker(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
  std::vector<std::thread> threads_;
  bool stopped_ = false;
};

}  // namespace natsfleet::consume
