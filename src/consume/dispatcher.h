// Runs handlers for one subscription on a fixed number of threads ("concurrency"), in arrival
// order. The queue of messages waiting for a thread is bounded where it can be (core
// broadcasts); a redelivery of a message still waiting replaces it. Shutdown lets running
// handlers finish up to a deadline and hands whatever was queued but never started back to the
// caller (to nak it); a handler that overruns is waited for by join(), never left running on
// freed state. keep_alive() tells the owner which messages, waiting or being handled, have been
// held long enough to need an in-progress ack.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/ring_queue.h"
#include "nats/connection.h"

namespace natsfleet::consume {

class Dispatcher {
 public:
  using Clock = std::chrono::steady_clock;
  // A message's turn on a handler thread: `probe` for one submitted with Placement::probe;
  // `started` when the thread took it (the process callback need not read the clock again).
  struct Turn {
    bool probe = false;
    Clock::time_point started;
  };
  using Process = std::function<void(nats::InboundMessage&&, const Turn&)>;
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
    // The time source for arrival and start stamps (tests pass a base::ManualClock).
    const base::Clock* clock = &base::Clock::steady();
    // Reads the intake into this dispatcher (submit/submit_all), waiting up to `wait` for a
    // first message: called by one handler thread at a time, and only when none waits here, so
    // a thread that reads a message usually runs it too. false: nothing to read from now (the
    // thread then waits for work up to feed_wait). Without it, the intake submits.
    std::function<bool(std::chrono::milliseconds wait)> feed;
    // How long a read waits, and so how late a message submitted meanwhile (a probe, a message
    // handed back) can start.
    std::chrono::milliseconds feed_wait{100};
  };

  enum class Placement {
    back,     // an ordinary delivery
    front,    // older work handed back (runs before what arrived since)
    probe,    // runs next, with probe = true
    replace,  // a redelivery: replaces a waiting message with the same key, else back
  };

  // What keep_alive() found.
  struct KeepAlive {
    std::vector<std::string> due;               // reply subjects owed an in-progress ack now
    std::vector<nats::InboundMessage> expired;  // waited past the limit: removed, to give back
    std::vector<std::string> overran;           // handlers that just ran past the limit
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
  // Ordinary deliveries (Placement::back) with one lock and at most one wake-up per idle
  // handler thread. Only for an unbounded queue (max_queued 0): nothing is displaced. After
  // stop() every message is left in `batch` for the caller to nak; otherwise `batch` is emptied.
  void submit_all(std::vector<nats::InboundMessage>& batch);
  // Refuses new work, rejects the queue, waits for running handlers until `deadline`. Returns
  // false when some handler was still running at the deadline; join() waits for it.
  bool stop(std::chrono::milliseconds deadline, const Reject& reject);
  // After stop(): waits until `until` for running handlers to return. False when one still runs.
  bool await_idle(Clock::time_point until);
  // Waits for every handler thread to end (after stop()).
  void join();
  // While held, no handler thread starts a waiting message (what runs finishes): a message
  // started while its ack cannot reach the broker is likely handled twice. What waits stays
  // queued and is kept alive as before; one gone stale meanwhile is skipped when it starts.
  void hold(bool held);
  size_t queued() const;
  // Messages waiting here or being handled.
  size_t in_hand() const;
  // Messages this dispatcher holds, waiting or being handled, that have gone `every` since they
  // arrived (InboundMessage::received, else when submitted) or since their last in-progress ack
  // (InboundMessage::kept_alive, then what this records as sent) are due another. `limit`
  // bounds how long a message is kept alive: a waiting message older than that (not a probe) is
  // taken out of the queue for the caller to give back; a handler running longer is reported
  // once in `overran` and owed nothing more, so a hung handler's message expires. A waiting
  // message not kept alive for `stale_after` (its owner was paused) is left alone: it has
  // likely been handed on, and its handler thread sees so in InboundMessage::kept_alive, which
  // is set when it starts. Messages without a reply subject are skipped.
  KeepAlive keep_alive(Clock::time_point now, Clock::duration every, Clock::duration limit,
                       Clock::duration stale_after = Clock::duration::max());

 private:
  struct Item {
    nats::InboundMessage msg;
    bool probe = false;
    Clock::time_point arrived;
    Clock::time_point touched;  // arrival or the last in-progress ack
  };
  // What a handler thread is running, for keep_alive().
  struct Running {
    bool active = false;
    bool overran = false;
    std::string reply;
    Clock::time_point started;
    Clock::time_point touched;
  };
  struct State {
    std::mutex mu;
    std::condition_variable work_ready;
    std::condition_variable idle;
    base::RingQueue<Item> queue;
    std::vector<Running> slots;  // one per handler thread
    int running = 0;
    int waiting = 0;       // idle workers: a submit wakes one only when someone waits
    bool reading = false;  // a worker is in Options::feed
    bool stopping = false;
    bool held = false;  // hold()
    Process process;
    const base::Clock* clock = nullptr;
    std::function<bool(std::chrono::milliseconds)> feed;  // Options::feed
    std::chrono::milliseconds feed_wait{0};
  };
  static void worker(const std::shared_ptr<State>& state, size_t slot);
  // A worker with nothing queued reads the intake (or, when another does, waits for work).
  static void feed_or_wait(State& state, std::unique_lock<std::mutex>& lock);

  const Options options_;
  std::shared_ptr<State> state_;
  std::vector<std::thread> threads_;
  std::mutex join_mu_;
};

}  // namespace natsfleet::consume
