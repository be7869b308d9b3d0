// Runs handlers for one subscription on a fixed number of threads ("concurrency"), in arrival
// order. The queue of messages waiting for a thread is bounded where it can be (core
// broadcasts); a redelivery of a message still waiting replaces it. Shutdown lets running
// handlers finish up to a deadline and hands whatever was queued but never started back to the
// caller (to nak it); a handler that overruns is waited for by join(), never left running on
// freed state.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nats/connection.h"

namespace natsfleet::consume {

class Dispatcher {
 public:
  // `probe` is true for a message submitted with Placement::probe.
  using Process = std::function<void(nats::InboundMessage&&, bool probe)>;
  using Reject = std::function<void(nats::InboundMessage&&)>;
  // What makes two messages "the same" for replacement and for dropping: a key, or empty.
  using Key = std::function<std::string(const nats::InboundMessage&)>;

  struct Options {
    int concurrency = 1;
    // Messages waiting for a thread; 0: no bound (the intake bounds them, as a pull window or a
    // consumer's max_ack_pending does). When full, the oldest waiting message with the new
    // one's key is dropped, or the oldest of all when none has it.
    size_t max_queued = 0;
    Key key;
  };

  enum class Placement {
    back,     // an ordinary delivery
    front,    // older work handed back (runs before what arrived since)
    probe,    // runs next, with probe = true
    replace,  // a redelivery: replaces a waiting message with the same key, else back
  };

  struct Submitted {
    std::optional<nats::InboundMessage> refused;    // after stop(): the caller naks it
    std::optional<nats::InboundMessage> displaced;  // dropped (queue full) or replaced
  };

  Dispatcher(Options options, Process process);
  // Stops with a zero deadline if still running, then waits for running handlers.
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  Submitted submit(nats::InboundMessage&& msg, Placement placement = Placement::back);
  // Refuses new work, rejects the queue, waits for running handlers until `deadline`. Returns
  // false when some handler was still running at the deadline; join() waits for it.
  bool stop(std::chrono::milliseconds deadline, const Reject& reject);
  // Waits for every handler thread to end (after stop()).
  void join();
  size_t queued() const;
  // Reply subjects of the waiting messages (for in-progress acks while they wait).
  std::vector<std::string> queued_replies() const;

 private:
  struct Item {
    nats::InboundMessage msg;
    bool probe = false;
  };
  struct State {
    std::mutex mu;
    std::condition_variable work_ready;
    std::condition_variable idle;
    std::deque<Item> queue;
    int running = 0;
    int waiting = 0;  // idle workers: a submit wakes one only when someone waits
    bool stopping = false;
    Process process;
  };
  static void worker(const std::shared_ptr<State>& state);

  const Options options_;
  std::shared_ptr<State> state_;
  std::vector<std::thread> threads_;
  std::mutex join_mu_;
};

}  // namespace natsfleet::consume
