// `natsfleet run`: a config turned into a running fleet. Each subscription hands its messages to
// a sink; health endpoints tell the truth; with no servers configured, an embedded broker runs.
//
//   Daemon daemon(config::load_config(path).value(), overrides);
//   int code = daemon.run(stop);   // blocks until `stop` fires or a fatal state: 0 or 70
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config_error.h"
#include "config/daemon_config.h"
#include "config/lint.h"

namespace natsfleet::daemon {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitFatal = 70;

// Set from the signal thread: a stop (run() returns) or a reload (run() reads the config again).
class StopRequest {
 public:
  void request() {
    std::lock_guard lock(mu_);
    requested_ = true;
    cv_.notify_all();
  }
  bool requested() const {
    std::lock_guard lock(mu_);
    return requested_;
  }
  void request_reload() {
    std::lock_guard lock(mu_);
    ++reloads_asked_;
    cv_.notify_all();
  }
  // True once for any number of reloads asked since the last call.
  bool take_reload() {
    std::lock_guard lock(mu_);
    const bool asked = reloads_asked_ != reloads_taken_;
    reloads_taken_ = reloads_asked_;
    return asked;
  }
  // Waits until a stop or a reload is requested or `timeout` passes; true when a stop is.
  bool wait_for(std::chrono::microseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return requested_ || reloads_asked_ != reloads_taken_; });
    return requested_;
  }
  // Waits until a stop or a reload is requested; true when a stop is.
  bool wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return requested_ || reloads_asked_ != reloads_taken_; });
    return requested_;
  }

 private:
  friend class Daemon;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool requested_ = false;
  unsigned reloads_asked_ = 0;
  unsigned reloads_taken_ = 0;
};

class Daemon {
 public:
  // `servers` (from --server) replaces the config's servers when not empty.
  Daemon(config::DaemonConfig config, std::vector<std::string> servers);
  ~Daemon();

  // Runs until `stop` is requested (exit 0 after a clean shutdown) or a fatal state (exit 70).
  // A reload request reads the config file again and applies it (reload_plan.h): a config
  // that fails to load is logged and the running one kept.
  int run(StopRequest& stop);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace natsfleet::daemon
