#include "fleet/fatal_reporter.h"

#include "base/log_event.h"

namespace natsfleet::fleet {

void FatalReporter::stop() {
  quiet();
  if (!thread_.joinable()) return;
  if (thread_.get_id() == std::this_thread::get_id())
    thread_.detach();
  else
    thread_.join();
}

void FatalReporter::on_fatal(FatalHandler handler) {
  std::lock_guard lock(mu_);
  handler_ = std::move(handler);
}

void FatalReporter::start() {
  thread_ = std::thread([this] { run(); });
}

void FatalReporter::open() {
  std::lock_guard lock(mu_);
  open_ = true;
  wake_.notify_all();
}

void FatalReporter::report(const std::string& subscription, const std::string& reason) {
  const std::string stated = subscription.empty() ? reason : subscription + ": " + reason;
  // All under the lock: once the handler may run, it may free this reporter.
  std::lock_guard lock(mu_);
  if (!reason_.empty() || quiet_) return;
  reason_ = stated;
  base::log_event(log_, spdlog::level::err,
                  {{"event", "fatal"}, {"subscription", subscription}, {"error", reason}},
                  "fatal: {}", stated);
  pending_ = FatalReport{subscription, reason};
  wake_.notify_all();
}

void FatalReporter::quiet() {
  std::lock_guard lock(mu_);
  quiet_ = true;
  wake_.notify_all();
}

void FatalReporter::forget() {
  std::lock_guard lock(mu_);
  reason_.clear();
  pending_.reset();
}

std::string FatalReporter::reason() const {
  std::lock_guard lock(mu_);
  return reason_;
}

void FatalReporter::run() {
  std::unique_lock lock(mu_);
  wake_.wait(lock, [&] { return quiet_ || (open_ && pending_); });
  if (quiet_) return;
  const FatalReport report = *pending_;
  const FatalHandler handler = handler_;
  lock.unlock();
  if (!handler) return;
  try {
    handler(report);
  } catch (const std::exception& e) {
    base::log_event(log_, spdlog::level::err,
                    {{"event", "fatal-handler-threw"}, {"error", e.what()}},
                    "fatal handler threw: {}", e.what());
  } catch (...) {
    base::log_event(log_, spdlog::level::err, {{"event", "fatal-handler-threw"}},
                    "fatal handler threw something that is not a std::exception");
  }
}

}  // namespace natsfleet::fleet
