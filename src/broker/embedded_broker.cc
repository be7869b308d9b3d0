#include "broker/embedded_broker.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>
#include <type_traits>
#include <vector>

extern char** environ;

// The public header keeps the child's id as an int, without <sys/types.h>.
static_assert(std::is_same_v<pid_t, int>);

namespace natsfleet {
namespace {

using Clock = std::chrono::steady_clock;

// The server is ready once it greets a client with its INFO line.
bool greets(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{0, 500'000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    char buf[5] = {};
    ok = ::recv(fd, buf, 4, MSG_WAITALL) == 4 && std::string(buf, 4) == "INFO";
  }
  ::close(fd);
  return ok;
}

}  // namespace

int broker::free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

EmbeddedBroker::EmbeddedBroker(EmbeddedBrokerOptions options) : options_(std::move(options)) {}

EmbeddedBroker::~EmbeddedBroker() {
  stop();
  if (owns_state_dir_) {
    std::error_code ignored;
    std::filesystem::remove_all(state_dir_, ignored);
  }
}

std::string EmbeddedBroker::url() const { return "nats://127.0.0.1:" + std::to_string(port_); }

Result<void> EmbeddedBroker::start() {
  if (running()) return {};
  if (state_dir_.empty()) {
    state_dir_ = options_.state_dir;
    if (state_dir_.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/natsfleet-broker-XXXXXX";
      std::vector<char> buf(pattern.begin(), pattern.end());
      buf.push_back('\0');
      if (!::mkdtemp(buf.data()))
        return Result<void>(Errc::invalid_argument, "cannot create a state directory in /tmp");
      state_dir_ = buf.data();
      owns_state_dir_ = true;
    }
    std::error_code ec;
    std::filesystem::create_directories(state_dir_ + "/jetstream", ec);
    if (ec)
      return Result<void>(Errc::invalid_argument, "cannot create broker state directory " +
                                                      state_dir_ + ": " + ec.message());
  }
  if (port_ == 0) port_ = options_.port > 0 ? options_.port : broker::free_loopback_port();

  std::vector<std::string> args = {options_.executable,
                                   "--jetstream",
                                   "--store_dir",
                                   state_dir_ + "/jetstream",
                                   "--addr",
                                   "127.0.0.1",
                                   "--port",
                                   std::to_string(port_),
                                   "--log",
                                   log_file()};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_file().c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  int rc = posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    return Result<void>(Errc::invalid_argument,
                        "cannot start " + options_.executable + " (is nats-server installed?)");
  }
  const auto until = Clock::now() + options_.ready_timeout;
  while (Clock::now() < until) {
    if (greets(port_)) return {};
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Result<void>(Errc::invalid_argument,
                          "nats-server exited at start-up; see " + log_file());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill();
  return Result<void>(Errc::timeout,
                      "nats-server did not accept clients in time; see " + log_file());
}

void EmbeddedBroker::reap(std::chrono::milliseconds grace) {
  const auto until = Clock::now() + grace;
  while (Clock::now() < until) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void EmbeddedBroker::stop() {
  if (!running()) return;
  ::kill(pid_, SIGTERM);
  reap(std::chrono::seconds(5));
}

void EmbeddedBroker::kill() {
  if (!running()) return;
  ::kill(pid_, SIGKILL);
  reap(std::chrono::seconds(5));
}

}  // namespace natsfleet
