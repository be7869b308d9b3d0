#include "daemon/service_notifier.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "base/file_descriptor.h"
#include "base/parse_number.h"

namespace natsfleet::daemon {

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

Error socket_error(const std::string& path, const char* what) {
  return Error{
      std::error_code(errno, std::system_category()),
      std::string("service manager socket ") + path + ": " + what + ": " + std::strerror(errno)};
}

}  // namespace

ServiceNotifier ServiceNotifier::from_environment() {
  std::optional<std::chrono::microseconds> watchdog;
  const std::string pid = env("WATCHDOG_PID");
  const bool ours = pid.empty() || base::parse_number<long>(pid) == long(::getpid());
  if (auto usec = base::parse_number<long long>(env("WATCHDOG_USEC")); ours && usec && *usec > 0)
    watchdog = std::chrono::microseconds(*usec);
  return ServiceNotifier(env("NOTIFY_SOCKET"), watchdog);
}

ServiceNotifier::ServiceNotifier(std::string socket_path,
                                 std::optional<std::chrono::microseconds> watchdog)
    : socket_path_(std::move(socket_path)), watchdog_(watchdog) {}

Result<void> ServiceNotifier::send(const std::string& state) const {
  if (!enabled()) return {};
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof address.sun_path || socket_path_.size() < 2 ||
      (socket_path_[0] != '/' && socket_path_[0] != '@'))
    return Result<void>(Errc::invalid_argument,
                        "NOTIFY_SOCKET is not a unix socket path: " + socket_path_);
  std::memcpy(address.sun_path, socket_path_.data(), socket_path_.size());
  if (socket_path_[0] == '@') address.sun_path[0] = '\0';  // abstract namespace
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_path_.size());

  base::FileDescriptor fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) return socket_error(socket_path_, "socket");
  if (::sendto(fd.get(), state.data(), state.size(), MSG_NOSIGNAL,
               reinterpret_cast<const sockaddr*>(&address), length) < 0)
    return socket_error(socket_path_, "send");
  return {};
}

}  // namespace natsfleet::daemon
