#include "sinks/worker_sink.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <tuple>
#include <utility>

#include "base/backoff.h"
#include "base/child_process.h"
#include "base/file_descriptor.h"
#include "base/log_event.h"
#include "sinks/record.h"
#include "sinks/worker_protocol.h"
#include "spdlog/spdlog.h"

namespace natsfleet::sinks {
namespace {

using std::chrono::milliseconds;

// A worker that closed its stdout is given this long to exit by itself before SIGKILL, so its
// real exit status reaches the log.
constexpr milliseconds kExitGrace{200};
// An answer line longer than this is a broken worker; it is dropped, not buffered without end.
constexpr size_t kMaxAnswerLine = 16u << 20;

// The worker is not there to answer (exited, not running, wedged, stopping): the message is
// fine, the downstream is not.
SinkResult nak(std::string error) { return SinkResult{Disposition::retry(), {}, std::move(error)}; }

int poll_timeout_ms(std::chrono::steady_clock::duration d) {
  const auto ms = std::chrono::ceil<milliseconds>(d).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1000));
}

// Sends a whole line without blocking past `deadline`. Returns {timed out, errno}.
std::pair<bool, int> send_line(int fd, std::string_view line,
                               std::chrono::steady_clock::time_point deadline) {
  size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n =
        ::send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return {false, errno};
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return {true, 0};
    pollfd p{fd, POLLOUT, 0};
    ::poll(&p, 1, poll_timeout_ms(left));
  }
  return {false, 0};
}

}  // namespace

struct WorkerSink::Worker {
  pid_t pid = 0;
  // Closed with the Worker, only when nobody can still be writing: the descriptor number is
  // never reused under a concurrent send().
  base::FileDescriptor in_fd;   // our end of its stdin: a socket, so a write to a dead worker is
                                // EPIPE and never SIGPIPE (send with MSG_NOSIGNAL)
  base::FileDescriptor out_fd;  // our end of its stdout, non-blocking
  uint64_t generation = 0;
  Clock::time_point started;
  // Guarded by the sink's mu_.
  bool writing = false;  // a delivery is sending its record; the others wait for write_free
  std::condition_variable write_free;
  bool wedged = false;
  bool reaped = false;
  int status = 0;
  // Only the supervisor touches these.
  std::string pending;
  bool skipping = false;  // inside an over-long line, dropping bytes up to its newline
};

struct WorkerSink::InFlight {
  uint64_t generation = 0;  // the worker it was written to; 0 while it waits for one
  Clock::time_point deadline;
  std::optional<SinkResult> result;
  std::condition_variable done;
};

WorkerSink::WorkerSink(WorkerSinkOptions options) : options_(std::move(options)) {
  if (options_.command.empty() || options_.command.front().empty())
    throw std::invalid_argument("worker sink: command is empty");
  wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd_) throw std::system_error(errno, std::generic_category(), "eventfd");
  supervisor_ = std::thread([this] { supervise(); });
}

WorkerSink::~WorkerSink() { stop(); }

std::string WorkerSink::describe() const {
  std::string text = "worker";
  for (const auto& arg : options_.command) text += " " + arg;
  return text;
}

pid_t WorkerSink::worker_pid() const {
  std::lock_guard lock(mu_);
  return worker_ ? worker_->pid : 0;
}

uint64_t WorkerSink::starts() const {
  std::lock_guard lock(mu_);
  return starts_;
}

bool WorkerSink::healthy() const {
  std::lock_guard lock(mu_);
  if (stopped_) return false;
  if (!crash_looping_) return true;
  return worker_ && Clock::now() - worker_->started >= options_.stable_after;
}

void WorkerSink::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_.get(), &one, sizeof one);
}

void WorkerSink::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    worker_up_.notify_all();
  }
  wake();
  // A second caller blocks here until the first one's join has returned.
  std::lock_guard join_lock(join_mu_);
  if (supervisor_.joinable()) supervisor_.join();
}

void WorkerSink::complete_locked(InFlight& entry, SinkResult result) {
  if (entry.result) return;  // the first outcome wins (an answer racing a timeout)
  entry.result = std::move(result);
  entry.done.notify_all();
}

void WorkerSink::begin_stop() {
  std::lock_guard lock(mu_);
  draining_ = true;
  worker_up_.notify_all();
}

SinkResult WorkerSink::deliver(const Message& message, const std::string& subscription) {
  try {
    std::unique_lock lock(mu_);
    if (stopping_) return nak("worker sink stopped");
    const uint64_t id = next_id_++;
    lock.unlock();
    std::string line = record_json_with_id(id, message, subscription);
    line += '\n';
    lock.lock();
    if (stopping_) return nak("worker sink stopped");

    auto entry = std::make_shared<InFlight>();
    // The worker's time starts once the record is ready: encoding a large one is ours.
    entry->deadline = Clock::now() + options_.timeout;
    const bool first = in_flight_.empty();
    in_flight_.emplace(id, entry);
    // The entry leaves the map however this function ends, so the supervisor never waits on a
    // delivery nobody is waiting for.
    struct Unregister {
      WorkerSink* sink;
      uint64_t id;
      std::unique_lock<std::mutex>& lock;
      ~Unregister() {
        if (!lock.owns_lock()) lock.lock();
        sink->in_flight_.erase(id);
      }
    } unregister{this, id, lock};
    if (first) wake();  // the supervisor's poll may be sleeping past this deadline

    worker_up_.wait_until(lock, entry->deadline,
                          [&] { return worker_ || stopping_ || draining_ || entry->result; });
    write_locked(lock, *entry, line);
    // The supervisor settles every entry by its deadline; the extra second only guards against
    // a supervisor that is itself stuck (e.g. reaping a worker in uninterruptible sleep).
    if (!entry->done.wait_until(lock, entry->deadline + std::chrono::seconds(1),
                                [&] { return entry->result.has_value(); }))
      complete_locked(*entry, nak("worker timed out"));
    SinkResult result = std::move(*entry->result);
    lock.unlock();
    for (size_t i = 0; i < result.publish.size(); ++i)
      result.publish[i].msg_id = publish_msg_id(message, subscription, i);
    return result;
  } catch (const std::exception& e) {
    return nak(std::string("worker sink: ") + e.what());
  }
}

void WorkerSink::write_locked(std::unique_lock<std::mutex>& lock, InFlight& entry,
                              const std::string& line) {
  if (entry.result) return;
  if (stopping_) return complete_locked(entry, nak("worker sink stopped"));
  if (!worker_) return complete_locked(entry, nak("worker not running"));
  auto worker = worker_;
  entry.generation = worker->generation;
  // One record at a time on its stdin: lines must not interleave.
  bool timed_out = !worker->write_free.wait_until(
      lock, entry.deadline, [&] { return !worker->writing || entry.result.has_value(); });
  int error = 0;
  if (!timed_out && !entry.result) {
    worker->writing = true;
    lock.unlock();
    std::tie(timed_out, error) = send_line(worker->in_fd.get(), line, entry.deadline);
    lock.lock();
    worker->writing = false;
    // Every waiter re-checks: one whose delivery was settled meanwhile (its worker died) does
    // not write, and must not swallow the wake-up the next writer needs.
    worker->write_free.notify_all();
  }
  if (timed_out) {
    // A worker that does not read its stdin is as wedged as one that does not answer; a
    // half-written line also leaves its input unusable.
    complete_locked(entry, nak("worker timed out (not reading its stdin)"));
    if (worker_ == worker) {
      worker->wedged = true;
      wake();
    }
  } else if (error != 0) {
    complete_locked(entry, nak(std::string("worker exited (") + std::strerror(error) + ")"));
  }
}

void WorkerSink::spawn_locked(Clock::time_point now) {
  int in_pair[2] = {-1, -1};
  int out_pipe[2] = {-1, -1};
  std::string error;
  pid_t pid = 0;
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_pair) != 0) {
    error = std::string("socketpair: ") + std::strerror(errno);
  } else if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
  } else {
    // dup2 clears close-on-exec on 0 and 1 only; every other descriptor of ours stays shut. The
    // daemon ignores SIGPIPE; a worker starts with default dispositions. Its own process group:
    // a terminal's Ctrl-C reaches only us, and stop() decides when the worker ends; killing the
    // group also takes any children it started.
    auto spawned = base::spawn_child(
        options_.command,
        {.stdin_fd = in_pair[1], .stdout_fd = out_pipe[1], .new_process_group = true});
    if (spawned) {
      pid = *spawned;
    } else {
      error = spawned.error().message;
    }
  }
  // The child's ends are its own now (or unused): ours are closed here, on every path.
  base::FileDescriptor ours_in(in_pair[0]), theirs_in(in_pair[1]);
  base::FileDescriptor ours_out(out_pipe[0]), theirs_out(out_pipe[1]);
  theirs_in.reset();
  theirs_out.reset();
  if (!error.empty()) {
    base::log_event(*spdlog::default_logger(), spdlog::level::err,
                    {{"event", "worker-failed"}, {"program", options_.command.front()}},
                    "worker sink: {}", error);
    note_death_locked(now, now);
    return;
  }
  ::fcntl(ours_out.get(), F_SETFL, ::fcntl(ours_out.get(), F_GETFL) | O_NONBLOCK);
  auto worker = std::make_shared<Worker>();
  worker->pid = pid;
  worker->in_fd = std::move(ours_in);
  worker->out_fd = std::move(ours_out);
  worker->generation = ++starts_;
  worker->started = now;
  worker_ = std::move(worker);
  base::log_event(*spdlog::default_logger(), spdlog::level::info,
                  {{"event", "worker-started"}, {"program", options_.command.front()}},
                  "worker sink: started {} (pid {})", options_.command.front(), pid);
  worker_up_.notify_all();
}

void WorkerSink::note_death_locked(Clock::time_point started, Clock::time_point now) {
  if (now - started >= options_.stable_after) {
    quick_deaths_ = 0;
    deaths_.clear();
    crash_looping_ = false;
  }
  deaths_.push_back(now);
  while (!deaths_.empty() && now - deaths_.front() > options_.crash_window) deaths_.pop_front();
  if (static_cast<int>(deaths_.size()) > options_.crash_limit && !crash_looping_) {
    crash_looping_ = true;
    base::log_event(*spdlog::default_logger(), spdlog::level::err,
                    {{"event", "worker-unhealthy"}, {"program", options_.command.front()}},
                    "worker sink: {} died {} times within {}s; unhealthy until one stays up {}s",
                    options_.command.front(), deaths_.size(),
                    std::chrono::duration<double>(options_.crash_window).count(),
                    std::chrono::duration<double>(options_.stable_after).count());
  }
  const milliseconds delay = base::exponential_delay(options_.restart_min, options_.restart_max,
                                                     static_cast<uint64_t>(quick_deaths_));
  ++quick_deaths_;
  restart_at_ = now + delay;
}

void WorkerSink::retire_worker(std::unique_lock<std::mutex>& lock, const std::string& reason,
                               Clock::time_point polite_until, milliseconds term_grace) {
  auto worker = std::move(worker_);
  worker_ = nullptr;
  // Everything written to it is lost with it; the broker redelivers after the delay.
  for (auto& [id, entry] : in_flight_)
    if (entry->generation == worker->generation) complete_locked(*entry, nak(reason));
  // Deliveries settled above may be queued for this worker's stdin: let them go now rather than
  // at their deadline.
  worker->write_free.notify_all();
  const bool stopping = stopping_;
  lock.unlock();
  if (!worker->reaped) {
    // Signals go to the group, created by spawn with the worker as leader; until it is reaped
    // its pid (and so the group id) cannot be reused.
    auto wait_until = [&](Clock::time_point until) {
      for (;;) {
        const pid_t r = ::waitpid(worker->pid, &worker->status, WNOHANG);
        if (r == worker->pid || (r < 0 && errno != EINTR)) return true;
        if (Clock::now() >= until) return false;
        std::this_thread::sleep_for(milliseconds(5));
      }
    };
    bool gone = wait_until(polite_until);
    if (!gone && term_grace > milliseconds::zero()) {
      ::kill(-worker->pid, SIGTERM);
      gone = wait_until(Clock::now() + term_grace);
    }
    if (!gone) {
      ::kill(-worker->pid, SIGKILL);
      while (::waitpid(worker->pid, &worker->status, 0) < 0 && errno == EINTR) {
      }
    }
    worker->reaped = true;
  }
  spdlog::log(stopping ? spdlog::level::info : spdlog::level::warn,
              "worker sink: {} (pid {}) {}: {}", options_.command.front(), worker->pid,
              base::describe_wait_status(worker->status), reason);
  lock.lock();
  if (!stopping_) note_death_locked(worker->started, Clock::now());
}

void WorkerSink::expire_deliveries(std::unique_lock<std::mutex>& lock, Clock::time_point now) {
  bool wedged = worker_ && worker_->wedged;
  for (auto& [id, entry] : in_flight_) {
    if (entry->result || entry->deadline > now) continue;
    if (entry->generation == 0) {
      complete_locked(*entry, nak("worker not running"));
      continue;
    }
    complete_locked(
        *entry, nak("worker timed out after " + std::to_string(options_.timeout.count()) + "ms"));
    if (worker_ && entry->generation == worker_->generation) wedged = true;
  }
  if (wedged) {
    base::log_event(*spdlog::default_logger(), spdlog::level::warn,
                    {{"event", "worker-timeout"}, {"program", options_.command.front()}},
                    "worker sink: {} (pid {}) did not answer within {}ms; killing it",
                    options_.command.front(), worker_->pid, options_.timeout.count());
    ::kill(-worker_->pid, SIGKILL);
    retire_worker(lock, "worker exited (killed: no answer in time)", Clock::now(), {});
  }
}

void WorkerSink::handle_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) return;
  auto answer = parse_worker_answer(line);
  if (!answer) {
    base::log_event(*spdlog::default_logger(), spdlog::level::warn,
                    {{"event", "worker-bad-answer"}, {"program", options_.command.front()}},
                    "worker sink: ignoring a line from {}: {}: {}", options_.command.front(),
                    answer.error().describe(), line.substr(0, 200));
    return;
  }
  std::lock_guard lock(mu_);
  auto it = in_flight_.find(answer->id);
  if (it == in_flight_.end() || it->second->result) {
    base::log_event(*spdlog::default_logger(), spdlog::level::debug,
                    {{"event", "worker-late-answer"}, {"program", options_.command.front()}},
                    "worker sink: answer for id {} which is no longer waiting", answer->id);
    return;
  }
  complete_locked(*it->second, std::move(answer->result));
}

bool WorkerSink::read_answers(Worker& worker) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(worker.out_fd.get(), buf, sizeof buf);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    std::string_view chunk(buf, static_cast<size_t>(n));
    while (!chunk.empty()) {
      const size_t newline = chunk.find('\n');
      if (newline == std::string_view::npos) {
        if (!worker.skipping) worker.pending.append(chunk);
        if (worker.pending.size() > kMaxAnswerLine) {
          base::log_event(*spdlog::default_logger(), spdlog::level::warn,
                          {{"event", "worker-bad-answer"}, {"program", options_.command.front()}},
                          "worker sink: dropping an answer line over {} bytes", kMaxAnswerLine);
          worker.pending.clear();
          worker.skipping = true;
        }
        break;
      }
      if (worker.skipping) {
        worker.skipping = false;
      } else {
        worker.pending.append(chunk.substr(0, newline));
        handle_line(worker.pending);
      }
      worker.pending.clear();
      chunk.remove_prefix(newline + 1);
    }
  }
}

void WorkerSink::note_stable_locked(Clock::time_point now) {
  if (!worker_ || now - worker_->started < options_.stable_after) return;
  quick_deaths_ = 0;
  if (crash_looping_)
    base::log_event(*spdlog::default_logger(), spdlog::level::info,
                    {{"event", "worker-stable"}, {"program", options_.command.front()}},
                    "worker sink: {} is stable again", options_.command.front());
  crash_looping_ = false;
  deaths_.clear();
}

bool WorkerSink::wait_for_worker(std::unique_lock<std::mutex>& lock,
                                 const std::shared_ptr<Worker>& worker, Clock::time_point now,
                                 Clock::time_point next) {
  lock.unlock();
  pollfd fds[2] = {{wake_fd_.get(), POLLIN, 0}, {worker ? worker->out_fd.get() : -1, POLLIN, 0}};
  const int ready = ::poll(fds, 2, poll_timeout_ms(next - now));
  if (ready > 0 && (fds[0].revents & POLLIN)) {
    uint64_t count = 0;
    [[maybe_unused]] auto n = ::read(wake_fd_.get(), &count, sizeof count);
  }
  bool open = true;
  if (ready > 0 && worker && fds[1].revents != 0) open = read_answers(*worker);
  lock.lock();
  return open;
}

void WorkerSink::supervise() {
  std::unique_lock lock(mu_);
  Clock::time_point stop_deadline{};
  bool stdin_closed = false;
  for (;;) {
    auto now = Clock::now();
    if (stopping_) {
      if (!worker_) break;
      if (!stdin_closed) {
        // EOF on stdin is the worker's signal to finish what it has and exit.
        ::shutdown(worker_->in_fd.get(), SHUT_WR);
        stdin_closed = true;
        stop_deadline = now + options_.stop_grace;
      }
      if (now >= stop_deadline) {
        retire_worker(lock, "worker sink stopped", now, options_.term_grace);
        break;
      }
    } else {
      if (!worker_ && now >= restart_at_) spawn_locked(now);
      if (worker_ && !worker_->reaped) {
        // A dead worker whose stdout lives on in a child of its own never sends EOF.
        const pid_t r = ::waitpid(worker_->pid, &worker_->status, WNOHANG);
        if (r == worker_->pid) worker_->reaped = true;
      }
      if (worker_ && worker_->reaped) {
        // Answers it wrote before dying are still in the pipe: they count.
        auto dead = worker_;
        lock.unlock();
        read_answers(*dead);
        lock.lock();
        if (worker_ == dead) retire_worker(lock, "worker exited", now, {});
        continue;
      }
      note_stable_locked(now);
      expire_deliveries(lock, now);
      now = Clock::now();
    }

    Clock::time_point next = now + std::chrono::seconds(1);
    if (stopping_) next = std::min(next, stop_deadline);
    if (!worker_ && !stopping_) next = std::min(next, restart_at_);
    for (const auto& [id, entry] : in_flight_)
      if (!entry->result) next = std::min(next, entry->deadline);
    auto worker = worker_;
    const bool open = wait_for_worker(lock, worker, now, next);
    if (!open && worker_ == worker) {
      if (stopping_) {
        retire_worker(lock, "worker sink stopped", stop_deadline, options_.term_grace);
        break;
      }
      retire_worker(lock, "worker exited", Clock::now() + kExitGrace, {});
    }
  }
  for (auto& [id, entry] : in_flight_) complete_locked(*entry, nak("worker sink stopped"));
  stopped_ = true;
  worker_up_.notify_all();
}

}  // namespace natsfleet::sinks
