#include "support/notify_listener.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace natsfleet::testing {

namespace {

std::string make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "natsfleet-notify-XXXXXX");
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("notify socket: mkdtemp failed");
  return pattern;
}

}  // namespace

NotifyListener::NotifyListener()
    : dir_(make_temp_dir()),
      path_(dir_ + "/notify.sock"),
      fd_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (!fd_ || path_.size() >= sizeof address.sun_path)
    throw std::runtime_error("notify socket: cannot make " + path_);
  std::memcpy(address.sun_path, path_.c_str(), path_.size() + 1);
  if (::bind(fd_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    throw std::runtime_error("notify socket: cannot bind " + path_ + ": " + std::strerror(errno));
}

NotifyListener::~NotifyListener() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::optional<std::string> NotifyListener::receive(std::chrono::milliseconds timeout) {
  pollfd p{.fd = fd_.get(), .events = POLLIN, .revents = 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
  char buf[4096];
  const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
  if (n < 0) return std::nullopt;
  received_.emplace_back(buf, static_cast<size_t>(n));
  return received_.back();
}

bool NotifyListener::wait_for_line(const std::string& line, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    auto datagram = receive(left);
    if (!datagram) return false;
    std::istringstream lines(*datagram);
    for (std::string l; std::getline(lines, l);)
      if (l.compare(0, line.size(), line) == 0) return true;
  }
}

std::string NotifyListener::transcript() const {
  std::string out;
  for (const auto& d : received_) out += "[" + d + "]\n";
  return out;
}

ScopedEnv::ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
  if (const char* old = std::getenv(name_.c_str())) previous_ = old;
  ::setenv(name_.c_str(), value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() {
  if (previous_)
    ::setenv(name_.c_str(), previous_->c_str(), 1);
  else
    ::unsetenv(name_.c_str());
}

}  // namespace natsfleet::testing
