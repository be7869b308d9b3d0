#include "broker/nats_server_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "base/file_descriptor.h"

namespace natsfleet::broker {
namespace {

// Logs of the servers natsfleet starts are read for their tail only; the cap guards against a
// runaway log.
constexpr std::streamoff kMaxLogBytesRead = 1 << 20;

sockaddr_in loopback_address(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

}  // namespace

Result<void> NatsServerProcess::spawn(const NatsServerCommand& command) {
  if (child_.running())
    return Result<void>(Errc::invalid_argument, command.executable + " is already running");
  child_.kill();  // reaps one that exited
  std::vector<std::string> argv{command.executable};
  argv.insert(argv.end(), command.args.begin(), command.args.end());
  auto child = base::ChildProcess::start(argv, {.stdin_path = "/dev/null",
                                                .stdout_path = command.log_file,
                                                .stderr_to_stdout = true,
                                                .close_other_descriptors = true});
  if (!child)
    return Result<void>(Errc::invalid_argument,
                        "cannot start " + command.executable +
                            " (is nats-server installed?): " + child.error().message);
  child_ = std::move(child.value());
  log_file_ = command.log_file;
  executable_ = command.executable;
  return {};
}

Result<void> NatsServerProcess::wait_ready(const std::function<bool()>& ready,
                                           std::chrono::milliseconds timeout,
                                           std::chrono::milliseconds interval) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (auto how = child_.peek_exit())
      return Result<void>(Errc::protocol,
                          executable_ + " " + *how + " at start-up; see " + log_file_);
    if (child_.pid() <= 0)
      return Result<void>(Errc::invalid_argument, "no " + executable_ + " was started");
    if (ready()) return {};
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      return Result<void>(Errc::timeout, executable_ + " was not ready within " +
                                             std::to_string(timeout.count()) + " ms; see " +
                                             log_file_);
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(interval, deadline - now));
  }
}

std::string NatsServerProcess::log_tail(size_t lines) const {
  std::ifstream in(log_file_, std::ios::binary);
  if (!in || lines == 0) return {};
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(std::max<std::streamoff>(0, size - kMaxLogBytesRead));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Walk back over `lines` newlines, not counting the one that ends the last line.
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  size_t begin = end;
  size_t found = 0;
  while (begin > 0) {
    if (text[begin - 1] == '\n' && ++found == lines) break;
    --begin;
  }
  return text.substr(begin);
}

bool greets_client(int port) {
  base::FileDescriptor fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  sockaddr_in addr = loopback_address(port);
  timeval tv{0, 500'000};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return false;
  char buf[5] = {};
  return ::recv(fd.get(), buf, 4, MSG_WAITALL) == 4 && std::string(buf, 4) == "INFO";
}

std::vector<int> free_loopback_ports(size_t count) {
  std::vector<base::FileDescriptor> held;
  std::vector<int> ports;
  for (size_t i = 0; i < count; ++i) {
    base::FileDescriptor fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return {};
    sockaddr_in addr = loopback_address(0);
    socklen_t len = sizeof addr;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return {};
    ports.push_back(ntohs(addr.sin_port));
    held.push_back(std::move(fd));
  }
  return ports;
}

int free_loopback_port() {
  const auto ports = free_loopback_ports(1);
  return ports.empty() ? 0 : ports.front();
}

Result<std::string> make_temp_directory(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    return Result<std::string>(Errc::invalid_argument,
                               "cannot create " + pattern + ": " + std::strerror(errno));
  return pattern;
}

}  // namespace natsfleet::broker
