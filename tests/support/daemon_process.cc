#include "support/daemon_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include <stdexcept>
#include <thread>

#include "base/child_process.h"
#include "support/nats_server.h"

extern char** environ;

namespace natsfleet::testing {

DaemonProcess::DaemonProcess(std::string dir, std::string name, std::string config,
                             std::vector<std::string> extra_args)
    : dir_(std::move(dir)), name_(std::move(name)), extra_args_(std::move(extra_args)) {
  std::ofstream(config_path()) << config;
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0 && !exit_code_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void DaemonProcess::start() {
  std::vector<std::string> args = {NATSFLEET_CLI_BIN, "run", config_path()};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log_path = dir_ + "/" + name_ + ".log";
  exit_code_.reset();
  if (descriptor_limit_) {
    // posix_spawn cannot set a limit: fork, and only async-signal-safe calls before exec.
    const rlimit limit{*descriptor_limit_, *descriptor_limit_};
    const pid_t child = ::fork();
    if (child < 0) throw std::runtime_error("cannot fork natsfleet");
    if (child == 0) {
      const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (log < 0 || ::dup2(log, 1) < 0 || ::dup2(log, 2) < 0) ::_exit(127);
      ::close_range(3, ~0U, 0);  // the test's own sockets must not count against the limit
      if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(127);
      ::execve(argv[0], argv.data(), environ);
      ::_exit(127);
    }
    pid_ = child;
    return;
  }
  auto child = base::spawn_child(
      args, {.stdout_path = log_path, .stderr_to_stdout = true, .search_path = false});
  if (!child) throw std::runtime_error("cannot start natsfleet: " + child.error().describe());
  pid_ = child.value();
}

void DaemonProcess::signal(int sig) {
  if (pid_ > 0 && !exit_code_) ::kill(pid_, sig);
}

std::optional<int> DaemonProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (exit_code_) return exit_code_;
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    if (std::chrono::steady_clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool DaemonProcess::running() { return pid_ > 0 && !wait_exit(std::chrono::milliseconds(0)); }

std::string DaemonProcess::log() const {
  std::ifstream in(dir_ + "/" + name_ + ".log");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TempDir::TempDir() {
  std::string pattern = "/tmp/natsfleet-e2e-XXXXXX";
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

SinkFile read_sink_file(const std::string& path) {
  SinkFile f;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto record = nlohmann::json::parse(line, nullptr, false);
    if (!record.is_object()) continue;
    ++f.records;
    if (record.value("delivered", 1) > 1) ++f.redelivered;
    f.payloads.push_back(record.value("data", std::string()));
  }
  return f;
}

int readyz(int port) {
  int status = 0;
  http_get(port, "/readyz", &status);
  return status;
}

ChildProcess::ChildProcess(std::vector<std::string> argv) {
  auto child = base::ChildProcess::start(argv, {.reset_signals = false, .search_path = false});
  if (!child) throw std::runtime_error(child.error().describe());
  child_ = std::move(child.value());
}

uint64_t rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

std::string explain(const CliOutcome& outcome) {
  return "exit " + std::to_string(outcome.code) + "\nstdout:\n" + outcome.out + "\nstderr:\n" +
         outcome.err;
}

CliOutcome run_shell(const std::string& command) {
  TempDir dir;
  const std::string err_path = dir.path() + "/stderr";
  const std::string line = "( " + command + " ) 2>" + err_path;
  CliOutcome o;
  FILE* pipe = ::popen(line.c_str(), "r");
  if (!pipe) return o;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) o.out.append(buf, n);
  const int status = ::pclose(pipe);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::stringstream err;
  err << std::ifstream(err_path).rdbuf();
  o.err = err.str();
  return o;
}

CliOutcome run_cli(const std::string& args) {
  return run_shell(std::string(NATSFLEET_CLI_BIN) + " " + args);
}

}  // namespace natsfleet::testing
