// One nats-server child process, the one way natsfleet starts a broker: the daemon's embedded
// broker and the tests' NatsServer fixture both launch through it. Its output goes to a log file
// (errors printed before the server's own logging takes over land there too), it inherits no
// descriptor of ours and starts with default signal state; readiness is polled with a deadline
// and fails fast, naming the log, when the process exits.
//
//   NatsServerProcess server;
//   if (auto r = server.spawn({.args = {"--port", "4222"}, .log_file = log}); !r) ...;
//   if (auto r = server.wait_ready([&] { return greets(4222); }, 10s); !r) ...;
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "base/child_process.h"
#include "natsfleet/error.h"

namespace natsfleet::broker {

struct NatsServerCommand {
  std::string executable = "nats-server";  // looked up in PATH
  std::vector<std::string> args;           // flags, or "-c <config file>"
  std::string log_file;                    // the child's stdout and stderr, appended
};

// Not thread-safe: drive it from one thread.
class NatsServerProcess {
 public:
  NatsServerProcess() = default;
  ~NatsServerProcess() = default;  // kills (SIGKILL) and reaps a server still running
  NatsServerProcess(NatsServerProcess&&) = default;
  NatsServerProcess& operator=(NatsServerProcess&&) = default;

  // Starts the process without waiting. Errc::invalid_argument when it cannot be started (is
  // nats-server installed?) or one is already running.
  [[nodiscard]] Result<void> spawn(const NatsServerCommand& command);

  // Polls `ready` until it returns true. Errc::protocol when the process exits first, saying how
  // and naming the log file; Errc::timeout after `timeout`.
  [[nodiscard]] Result<void> wait_ready(
      const std::function<bool()>& ready, std::chrono::milliseconds timeout,
      std::chrono::milliseconds interval = std::chrono::milliseconds(20)) const;

  bool running() const { return child_.running(); }  // started and not exited
  pid_t pid() const { return child_.pid(); }         // -1 when none
  // How the server ended, once it exited (it stays unreaped until stop() or kill()).
  std::optional<std::string> exit_description() const { return child_.peek_exit(); }
  bool signal(int sig) const { return child_.signal(sig); }

  // SIGTERM (continuing a paused server first), SIGKILL after `grace`; reaps.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(5)) { child_.stop(grace); }
  void kill() { child_.kill(); }  // SIGKILL, as a crash would; reaps

  const std::string& log_file() const { return log_file_; }
  std::string log_tail(size_t lines = 40) const;  // the last lines of the log file

 private:
  base::ChildProcess child_;
  std::string log_file_;
  std::string executable_;
};

// True once a NATS server on 127.0.0.1:port greets a client with its INFO line (within ~500ms).
bool greets_client(int port);

// `count` distinct free loopback ports: every probe socket stays bound until all are picked, so
// the kernel cannot hand out the same port twice. Empty when the system refuses a socket.
std::vector<int> free_loopback_ports(size_t count);
int free_loopback_port();  // 0 when none could be had

// A new directory "<$TMPDIR or /tmp>/<prefix>XXXXXX".
[[nodiscard]] Result<std::string> make_temp_directory(const std::string& prefix);

}  // namespace natsfleet::broker
