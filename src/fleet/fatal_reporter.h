// A fleet's first fatal state: kept for its health (live = false) and handed once to the user's
// fatal handler on a thread of its own, off nats.c's and the supervisors' threads, so the handler
// may shut the fleet down without waiting on itself.
#pragma once

#include <spdlog/logger.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "natsfleet/fleet.h"

namespace natsfleet::fleet {

class FatalReporter {
 public:
  explicit FatalReporter(spdlog::logger& log) : log_(log) {}
  ~FatalReporter() { stop(); }
  FatalReporter(const FatalReporter&) = delete;
  FatalReporter& operator=(const FatalReporter&) = delete;

  // The handler a report is handed to; none: reports are only kept and logged. Any thread.
  void on_fatal(FatalHandler handler);
  // Starts the reporting thread. Throws std::system_error when the system refuses it.
  void start();
  // From here on a report reaches the handler (one made earlier waits until now).
  void open();
  // Keeps and logs the first report; later ones are dropped. Any thread.
  void report(const std::string& subscription, const std::string& reason);
  // Shutting down: a report not yet handed never is, later ones are dropped; the thread ends.
  void quiet();
  // quiet(), then waits for the thread and a handler it runs (from the handler's own thread,
  // as when the handler freed the fleet, the thread is left to end by itself).
  void stop();
  // As if nothing was ever reported (a start that failed before it could report anything).
  void forget();
  // The first report as the fleet's health states it, "" while none was made.
  std::string reason() const;

 private:
  void run();

  spdlog::logger& log_;
  mutable std::mutex mu_;
  std::string reason_;
  std::optional<FatalReport> pending_;
  FatalHandler handler_;
  bool open_ = false;
  bool quiet_ = false;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace natsfleet::fleet
