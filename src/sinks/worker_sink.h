// Hands messages to ONE long-lived worker process: sink records (with an "id") on its stdin, one
// JSON answer a line on its stdout (see worker_protocol.h), many deliveries in flight at once.
// The worker is started without a shell, restarted with backoff when it dies or wedges, and its
// stderr goes straight to ours.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/file_descriptor.h"
#include "sinks/sink.h"

namespace natsfleet::sinks {

class WorkerSink : public Sink {
 public:
  // Starts the worker in the background; deliveries wait (up to timeout) for it to be up. Throws
  // std::invalid_argument for an empty command, std::system_error when no thread can be started.
  explicit WorkerSink(WorkerSinkOptions options);
  // Calls stop().
  ~WorkerSink() override;
  WorkerSink(const WorkerSink&) = delete;
  WorkerSink& operator=(const WorkerSink&) = delete;

  // Blocks until the worker answers this delivery, dies (retry, "worker exited"), or the
  // timeout passes (retry, "worker timed out").
  SinkResult deliver(const Message& message, const std::string& subscription) override;
  bool healthy() const override;
  std::string describe() const override;
  // Closes the worker's stdin, lets it answer what is in flight for up to stop_grace, then
  // SIGTERM, then SIGKILL. What is still unanswered is retried. Idempotent.
  void stop() override;
  void begin_stop() override;

  // For tests and /status: the current worker's pid (0 while none runs) and how many workers
  // have been started so far.
  pid_t worker_pid() const;
  uint64_t starts() const;

 private:
  struct Worker;
  struct InFlight;
  using Clock = std::chrono::steady_clock;

  // The supervisor thread: starts the worker, reads its answers, settles deliveries that ran
  // out of time, notices deaths and runs the stop sequence.
  void supervise();
  void spawn_locked(Clock::time_point now);
  void note_death_locked(Clock::time_point started, Clock::time_point now);
  // A worker that has run stable_after is no longer crash looping.
  void note_stable_locked(Clock::time_point now);
  // Waits (unlocked) until `next`, a wake-up or output from `worker`, and reads that output;
  // false once the worker's stdout is closed.
  bool wait_for_worker(std::unique_lock<std::mutex>& lock, const std::shared_ptr<Worker>& worker,
                       Clock::time_point now, Clock::time_point next);
  // Drains the worker's stdout; false once it is closed.
  bool read_answers(Worker& worker);
  void handle_line(std::string_view line);
  // Naks what the current worker holds, then waits for it to exit: politely until
  // `polite_until`, then SIGTERM and `term_grace`, then SIGKILL. Unlocks while waiting.
  void retire_worker(std::unique_lock<std::mutex>& lock, const std::string& reason,
                     Clock::time_point polite_until, std::chrono::milliseconds term_grace);
  void expire_deliveries(std::unique_lock<std::mutex>& lock, Clock::time_point now);
  void complete_locked(InFlight& entry, SinkResult result);
  // Writes `line` to the running worker's stdin, one record at a time, by the entry's deadline;
  // settles the entry when it cannot (no worker, stopped, stdin not read, worker gone).
  void write_locked(std::unique_lock<std::mutex>& lock, InFlight& entry, const std::string& line);
  void wake();

  const WorkerSinkOptions options_;
  mutable std::mutex mu_;
  std::condition_variable worker_up_;
  std::shared_ptr<Worker> worker_;  // null while none runs
  std::map<uint64_t, std::shared_ptr<InFlight>> in_flight_;
  uint64_t next_id_ = 1;
  uint64_t starts_ = 0;
  bool stopping_ = false;
  bool draining_ = false;  // begin_stop(): nobody waits for a worker to come up
  bool stopped_ = false;
  Clock::time_point restart_at_{};
  int quick_deaths_ = 0;  // consecutive deaths of young workers: the backoff exponent
  std::deque<Clock::time_point> deaths_;  // within crash_window
  bool crash_looping_ = false;
  base::FileDescriptor wake_fd_;  // an eventfd that interrupts the supervisor's poll
  std::mutex join_mu_;            // stop() may be called from several threads
  std::thread supervisor_;
};

}  // namespace natsfleet::sinks
