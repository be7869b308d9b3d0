#include "fleet/broker_watch.h"

#include <algorithm>

#include "base/duration.h"
#include "base/log_event.h"
#include "nats/unreachable_reason.h"
#include "natsfleet/redact.h"

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;

// nats.c's words for every failure it does not name: a probe tells more.
constexpr std::string_view kNoServer = "No server available for connection";

std::string rounded(BrokerWatch::Clock::duration d) {
  return base::format_duration(std::chrono::duration_cast<std::chrono::seconds>(d));
}

}  // namespace

BrokerWatch::BrokerWatch(Options options, ClientError client_error, spdlog::logger& log)
    : options_(std::move(options)),
      client_error_(std::move(client_error)),
      log_(log),
      away_since_(Clock::now()),
      next_line_(away_since_ + options_.first),
      thread_([this](std::stop_token stop) { run(std::move(stop)); }) {}

BrokerWatch::~BrokerWatch() { stop(); }

void BrokerWatch::stop() {
  thread_.request_stop();
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

milliseconds BrokerWatch::interval(const Options& options, int n) {
  milliseconds wait = options.first;
  for (int i = 0; i < n && wait < options.longest; ++i) wait *= 2;
  return std::min(wait, options.longest);
}

void BrokerWatch::connected() {
  std::lock_guard lock(mu_);
  if (connected_) return;
  if (lines_ > 0)
    base::log_event(
        log_, spdlog::level::info,
        {{"event", "broker-back"},
         {"away_ms", std::chrono::duration_cast<milliseconds>(Clock::now() - away_since_).count()}},
        "the broker answers again after {}", rounded(Clock::now() - away_since_));
  connected_ = true;
  ++outage_;
  cause_.clear();
  wake_.notify_all();
}

void BrokerWatch::disconnected() {
  std::lock_guard lock(mu_);
  if (!connected_) return;
  connected_ = false;
  ++outage_;
  away_since_ = Clock::now();
  next_line_ = away_since_ + options_.first;
  lines_ = 0;
  looked_ = false;
  wake_.notify_all();
}

std::string BrokerWatch::cause() const {
  std::lock_guard lock(mu_);
  return cause_;
}

std::string BrokerWatch::cause_now() const {
  if (auto found = cause(); !found.empty()) return found;
  return probe();
}

std::string BrokerWatch::probe() const {
  std::string cause;
  for (const auto& server : options_.servers) {
    if (!cause.empty()) cause += "; ";
    cause += redact_url(server) + ": " + nats::unreachable_reason(server, options_.probe_timeout);
  }
  const std::string client = client_error_ ? client_error_() : std::string();
  if (!client.empty() && client != kNoServer) cause += " (the client's last error: " + client + ")";
  return cause;
}

void BrokerWatch::run(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    if (connected_ || (looked_ && Clock::now() < next_line_)) {
      // Woken by a change, by the stop, or when the next line is due.
      if (connected_)
        wake_.wait(lock, stop, [&] { return !connected_; });
      else
        wake_.wait_until(lock, stop, next_line_, [&] { return connected_; });
      continue;
    }
    const uint64_t outage = outage_;
    lock.unlock();
    std::string cause = probe();  // blocks up to probe_timeout a server
    lock.lock();
    if (outage != outage_ || connected_) continue;  // the broker came back meanwhile
    cause_ = std::move(cause);
    const bool first_look = !looked_;
    looked_ = true;
    if (first_look && Clock::now() < next_line_) continue;  // a warning only once it lasts
    const auto away = Clock::now() - away_since_;
    base::log_event(log_, spdlog::level::warn,
                    {{"event", "broker-unreachable"},
                     {"away_ms", std::chrono::duration_cast<milliseconds>(away).count()},
                     {"error", cause_}},
                    "no broker for {}: {}; still trying", rounded(away), cause_);
    next_line_ = Clock::now() + interval(options_, ++lines_);
  }
}

}  // namespace natsfleet::fleet
