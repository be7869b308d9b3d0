// Child processes started with posix_spawn: argv, no shell, standard streams redirected, signal
// state reset; and ChildProcess, which owns one (kills and reaps it when it goes).
//
//   auto child = base::ChildProcess::start({"nats-server", "-c", conf},
//                                          {.stdin_path = "/dev/null", .stdout_path = log,
//                                           .stderr_to_stdout = true});
//   if (!child) return child.error();
//   child->stop(std::chrono::seconds(5));
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "natsfleet/error.h"

namespace natsfleet::base {

struct ChildOptions {
  // A descriptor of ours dup2'd onto the child's stdin, stdout or stderr; -1: see the paths.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // A file opened as that stream (stdin read-only, stdout and stderr for append, created 0644);
  // empty: the stream is ours, inherited.
  std::string stdin_path;
  std::string stdout_path;
  std::string stderr_path;
  bool stderr_to_stdout = false;  // stderr is a copy of the child's stdout
  // Nothing of ours above stderr is inherited, close-on-exec or not (a test's client sockets).
  bool close_other_descriptors = false;
  // An empty signal mask and default dispositions: our blocked or ignored signals (a signal
  // thread's, SIGPIPE) must not be the child's.
  bool reset_signals = true;
  // Its own process group: a terminal's Ctrl-C reaches only us; killing the group takes any
  // children it started.
  bool new_process_group = false;
  // argv[0] is looked up in PATH when it has no '/'.
  bool search_path = true;
};

// The child's pid, or Errc::invalid_argument "spawn <argv[0]>: <why>".
[[nodiscard]] Result<pid_t> spawn_child(const std::vector<std::string>& argv,
                                        const ChildOptions& options = {});

// "exited with status 3", "killed by signal Killed" for a waitpid status.
std::string describe_wait_status(int status);

// One child process, owned: the destructor kills (SIGKILL) and reaps it unless it was reaped.
// Not thread-safe.
class ChildProcess {
 public:
  [[nodiscard]] static Result<ChildProcess> start(const std::vector<std::string>& argv,
                                                  const ChildOptions& options = {});

  ChildProcess() = default;
  explicit ChildProcess(pid_t pid) : pid_(pid) {}  // adopts a child already started
  ~ChildProcess();
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }  // -1 when none, or once reaped
  // True until the child has exited. Leaves an exited child unreaped (its pid stays ours and
  // cannot be recycled) until try_wait(), wait(), stop() or kill().
  bool running() const;
  // How it ended ("exited with status 1", "killed by signal Killed") once it has exited, without
  // reaping it; nullopt while it runs or when there is no child.
  std::optional<std::string> peek_exit() const;
  // Sends sig; false when there is no child to send it to.
  bool signal(int sig) const;

  // The waitpid status once it exited (reaping it), nullopt while it runs.
  std::optional<int> try_wait();
  // As try_wait, polling for up to timeout.
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  int wait();  // blocks until it exits

  // SIGTERM (after SIGCONT, should it be stopped), up to grace to exit, then SIGKILL; reaps.
  // Returns the waitpid status, or -1 when there was no child.
  int stop(std::chrono::milliseconds grace);
  int kill();  // SIGKILL, reaps

 private:
  pid_t pid_ = -1;
};

}  // namespace natsfleet::base
