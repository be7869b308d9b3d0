// The service manager's end of sd_notify, for tests: a unix datagram socket in a temporary
// directory of its own, whose path goes in NOTIFY_SOCKET, and the datagrams sent to it.
//
//   NotifyListener manager;
//   ScopedEnv notify("NOTIFY_SOCKET", manager.path());
//   ASSERT_TRUE(manager.wait_for_line("READY=1", 15s));
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/file_descriptor.h"

namespace natsfleet::testing {

class NotifyListener {
 public:
  NotifyListener();
  ~NotifyListener();  // removes the socket and its directory
  NotifyListener(const NotifyListener&) = delete;
  NotifyListener& operator=(const NotifyListener&) = delete;
  const std::string& path() const { return path_; }
  // The next datagram, or nullopt when none came within `timeout`.
  std::optional<std::string> receive(std::chrono::milliseconds timeout);
  // Receives until a datagram holds a line (one of its newline-separated assignments) that
  // begins with `line`; false when `timeout` passed first. Every datagram received is kept in
  // received().
  bool wait_for_line(const std::string& line, std::chrono::milliseconds timeout);
  const std::vector<std::string>& received() const { return received_; }
  std::string transcript() const;  // every datagram, for failure messages

 private:
  std::string dir_;
  std::string path_;
  base::FileDescriptor fd_;
  std::vector<std::string> received_;
};

// Sets an environment variable (for the children a test starts) and restores it on scope exit.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> previous_;
};

}  // namespace natsfleet::testing
