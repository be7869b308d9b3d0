#include "base/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

extern char** environ;

namespace natsfleet::base {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(10);

// posix_spawn's two attribute objects, destroyed on every path.
struct SpawnAttributes {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  SpawnAttributes() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
  }
  ~SpawnAttributes() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
};

void redirect(posix_spawn_file_actions_t& actions, int target, int fd, const std::string& path,
              int flags) {
  if (fd >= 0) {
    // dup2 clears close-on-exec on the target only; the source stays as it was.
    posix_spawn_file_actions_adddup2(&actions, fd, target);
  } else if (!path.empty()) {
    posix_spawn_file_actions_addopen(&actions, target, path.c_str(), flags, 0644);
  }
}

}  // namespace

Result<pid_t> spawn_child(const std::vector<std::string>& argv, const ChildOptions& options) {
  if (argv.empty() || argv.front().empty())
    return Result<pid_t>(Errc::invalid_argument, "spawn: no program");
  SpawnAttributes spawn;
  redirect(spawn.actions, STDIN_FILENO, options.stdin_fd, options.stdin_path, O_RDONLY);
  redirect(spawn.actions, STDOUT_FILENO, options.stdout_fd, options.stdout_path,
           O_WRONLY | O_CREAT | O_APPEND);
  if (options.stderr_to_stdout) {
    posix_spawn_file_actions_adddup2(&spawn.actions, STDOUT_FILENO, STDERR_FILENO);
  } else {
    redirect(spawn.actions, STDERR_FILENO, options.stderr_fd, options.stderr_path,
             O_WRONLY | O_CREAT | O_APPEND);
  }
  if (options.close_other_descriptors) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    posix_spawn_file_actions_addclosefrom_np(&spawn.actions, STDERR_FILENO + 1);
#endif
  }
  short flags = 0;
  if (options.reset_signals) {
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&spawn.attributes, &none);
    sigset_t all;
    sigfillset(&all);
    posix_spawnattr_setsigdefault(&spawn.attributes, &all);
    flags |= POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  }
  if (options.new_process_group) {
    posix_spawnattr_setpgroup(&spawn.attributes, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&spawn.attributes, flags);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc =
      options.search_path
          ? ::posix_spawnp(&pid, args[0], &spawn.actions, &spawn.attributes, args.data(), environ)
          : ::posix_spawn(&pid, args[0], &spawn.actions, &spawn.attributes, args.data(), environ);
  if (rc != 0)
    return Result<pid_t>(Errc::invalid_argument,
                         "spawn " + argv.front() + ": " + std::strerror(rc));
  return pid;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + ::strsignal(WTERMSIG(status));
  return "ended";
}

Result<ChildProcess> ChildProcess::start(const std::vector<std::string>& argv,
                                         const ChildOptions& options) {
  auto pid = spawn_child(argv, options);
  if (!pid) return pid.error();
  return ChildProcess(*pid);
}

ChildProcess::~ChildProcess() { kill(); }

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    kill();
    pid_ = std::exchange(other.pid_, -1);
  }
  return *this;
}

bool ChildProcess::running() const {
  if (pid_ <= 0) return false;
  siginfo_t info{};
  // WNOWAIT leaves the zombie in place, so pid_ stays ours until reaped.
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
    return false;
  return info.si_pid == 0;
}

std::optional<std::string> ChildProcess::peek_exit() const {
  if (pid_ <= 0) return std::nullopt;
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid == 0)
    return std::nullopt;
  switch (info.si_code) {
    case CLD_EXITED:
      return "exited with status " + std::to_string(info.si_status);
    case CLD_KILLED:
    case CLD_DUMPED:
      return std::string("killed by signal ") + ::strsignal(info.si_status);
    default:
      return std::string("ended");
  }
}

bool ChildProcess::signal(int sig) const { return pid_ > 0 && ::kill(pid_, sig) == 0; }

std::optional<int> ChildProcess::try_wait() {
  if (pid_ <= 0) return std::nullopt;
  int status = 0;
  pid_t got = 0;
  do {
    got = ::waitpid(pid_, &status, WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got == 0) return std::nullopt;
  pid_ = -1;
  return got < 0 ? -1 : status;
}

std::optional<int> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (pid_ <= 0) return std::nullopt;
    if (auto status = try_wait()) return status;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(kPollInterval);
  }
}

int ChildProcess::wait() {
  if (pid_ <= 0) return -1;
  int status = 0;
  pid_t got = 0;
  do {
    got = ::waitpid(pid_, &status, 0);
  } while (got < 0 && errno == EINTR);
  pid_ = -1;
  return got < 0 ? -1 : status;
}

int ChildProcess::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGCONT);  // a stopped process acts on SIGTERM only once continued
  ::kill(pid_, SIGTERM);
  if (auto status = wait_for(grace)) return *status;
  return kill();
}

int ChildProcess::kill() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGKILL);
  return wait();
}

}  // namespace natsfleet::base
