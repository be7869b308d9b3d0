// `natsfleet run` as a separate process for end-to-end tests: writes its config, starts it,
// signals it, waits for its exit code, and keeps its log for failure messages.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/child_process.h"

namespace natsfleet::testing {

class DaemonProcess {
 public:
  // `config` is the TOML text; it is written to <dir>/<name>.toml.
  DaemonProcess(std::string dir, std::string name, std::string config,
                std::vector<std::string> extra_args = {});
  // Kills the process (SIGKILL) if still running.
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // From the next start(), the process runs with this RLIMIT_NOFILE (soft and hard), as under
  // `ulimit -n`, and with only descriptors 0-2 inherited.
  void limit_descriptors(unsigned long limit) { descriptor_limit_ = limit; }
  void start();
  void signal(int sig);
  // The exit code (or 128 + signal) once it exited within `timeout`, nullopt otherwise.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);
  bool running();
  std::string log() const;
  std::string config_path() const { return dir_ + "/" + name_ + ".toml"; }
  pid_t pid() const { return pid_; }

 private:
  std::string dir_;
  std::string name_;
  std::vector<std::string> extra_args_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::optional<unsigned long> descriptor_limit_;
};

// A helper program (a test endpoint, say) run for the length of a test: killed with SIGKILL and
// reaped when the object goes.
class ChildProcess {
 public:
  // argv[0] is a path. Throws std::runtime_error when it cannot be spawned.
  explicit ChildProcess(std::vector<std::string> argv);
  pid_t pid() const { return child_.pid(); }

 private:
  base::ChildProcess child_;
};

// `natsfleet <args>` run to its end through the shell (args may redirect): exit code (-1 when
// it did not exit normally), standard output and standard error.
struct CliOutcome {
  int code = -1;
  std::string out;
  std::string err;
};
// "exit N" and both outputs, for a failed assertion's message.
std::string explain(const CliOutcome& outcome);
CliOutcome run_cli(const std::string& args);
// Any command line, through the shell, the same way.
CliOutcome run_shell(const std::string& command);

// The resident set size of a process in KiB, from /proc (0 when it cannot be read).
uint64_t rss_kib(pid_t pid);

// A temporary directory removed with everything in it when the object goes.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Lines of a JSONL sink file parsed: payload ("data") -> how many times it was written.
struct SinkFile {
  size_t records = 0;
  size_t redelivered = 0;
  std::vector<std::string> payloads;
};
SinkFile read_sink_file(const std::string& path);

// The status of GET /readyz on a daemon's health port (0 when nothing answers).
int readyz(int port);

}  // namespace natsfleet::testing
