// Fleet::Impl's start and stop of the whole fleet: connection, broker watch, every declared
// subscription, the fatal reporter, and the shutdown that keeps its deadline.
#include "fleet/fleet_impl.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <system_error>

#include "base/log_event.h"
#include "fleet/fleet_log.h"
#include "nats/connection.h"
#include "natsfleet/redact.h"

namespace natsfleet {

using fleet::Clock;

namespace {

// The deadline of the shutdown ~Fleet makes when none was asked for.
constexpr std::chrono::milliseconds kCloseDeadline = std::chrono::seconds(2);

fleet::FleetContext context_of(FleetOptions options) {
  fleet::FleetContext context;
  context.options = std::move(options);
  context.log = fleet::make_fleet_logger(context.options);
  return context;
}

nats::ConnectOptions connect_options(const FleetOptions& o) {
  return {
      .servers = o.servers,
      .name = o.name,
      .credentials_file = o.credentials_file,
      .auth = o.auth,
      .tls_ca = o.tls.ca,
      .tls_cert = o.tls.cert,
      .tls_key = o.tls.key,
      .reconnect_wait_min = o.reconnect_wait_min,
      .reconnect_wait_max = o.reconnect_wait_max,
      .max_reconnect = o.max_reconnect,
      .connect_timeout = o.connect_timeout,
      .ping_interval = o.ping_interval,
  };
}

}  // namespace

Fleet::Impl::Impl(FleetOptions options)
    : context_(context_of(std::move(options))), reporter_(*context_.log) {
  context_.fatal = [this](const std::string& sub, const std::string& reason) {
    report_fatal(sub, reason);
  };
}

Fleet::Impl::~Impl() {
  shutdown(kCloseDeadline);
  reporter_.stop();  // a handler it runs may use this fleet
}

bool Fleet::Impl::close() {
  shutdown(kCloseDeadline);
  std::vector<fleet::Supervised*> subs;
  {
    std::lock_guard lock(subs_mu_);
    for (auto& sub : subs_) subs.push_back(sub.get());
  }
  Clock::time_point until;
  {
    std::lock_guard lock(mu_);
    for (auto& sub : removed_) subs.push_back(sub.get());
    until = last_deadline_;
  }
  size_t running = 0;
  for (auto* sub : subs)
    if (!sub->await_handlers(until)) ++running;
  if (running > 0)
    base::log_event(*context_.log, spdlog::level::warn,
                    {{"event", "handlers-left-running"}, {"subscriptions", running}},
                    "handlers of {} subscription(s) still run past the shutdown deadline: left "
                    "to finish, the fleet is freed once they return (their verdicts are "
                    "dropped; unacked, their messages are redelivered after ack_wait)",
                    running);
  return running == 0;
}

Result<void> Fleet::Impl::start() {
  std::lock_guard lock(mu_);
  if (started_) return Result<void>(Errc::invalid_argument, "start() called twice");
  const FleetOptions& o = context_.options;
  // Fatal reports are allowed from here on: a closed handler fires only once the connection
  // exists, and everything before this line only validates.
  started_ = true;
  if (auto watching = start_watch(); !watching) {
    started_ = false;
    return watching;
  }
  auto conn = nats::Connection::open(connect_options(o), connection_events());
  if (!conn) {
    // Back to where start() found the fleet, so it may be called again: nothing reported, no
    // reporter thread (a second one would be assigned over a joinable std::thread).
    started_ = false;
    watch_.reset();
    reporter_.forget();
    return conn.error();
  }
  {
    std::lock_guard subs_lock(subs_mu_);
    connection_ = std::move(conn.value());
    context_.connection = connection_.get();
  }
  if (auto running = start_subscriptions(); !running) return running;
  // A report from the connection's first moments reaches the handler only now that start()
  // has succeeded.
  reporter_.open();
  base::log_event(*context_.log, spdlog::level::info, {{"event", "started"}},
                  "started: {} work, {} broadcast subscription(s); connecting to {}", work_.size(),
                  broadcast_.size(), redact_urls(o.servers));
  return {};
}

void Fleet::Impl::shutdown(std::chrono::milliseconds deadline) {
  std::lock_guard once(shutdown_mu_);
  if (shut_down_ || !started_) return;
  const auto until = Clock::now() + deadline;
  {
    // From here on no broadcast is added: the set below is final.
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    last_deadline_ = until;
  }
  reporter_.quiet();
  std::vector<fleet::Supervised*> subs;
  {
    std::lock_guard lock(subs_mu_);
    for (auto& sub : subs_) subs.push_back(sub.get());
  }
  if (watch_) watch_->stop();  // the disconnect that shutting down makes is no outage
  base::log_event(*context_.log, spdlog::level::info,
                  {{"event", "shutting-down"}, {"deadline_ms", deadline.count()}},
                  "shutting down (deadline {} ms)", deadline.count());
  for (auto* sub : subs) sub->begin_shutdown();
  for (auto* sub : subs) sub->finish_handlers(until);
  if (connection_) {
    // Acks first: a drain or close must not overtake them.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (connection_->connected() && left.count() > 0)
      (void)connection_->flush(std::min(left, std::chrono::milliseconds(1000)));
    left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    connection_->shutdown(std::max(left, std::chrono::milliseconds(0)));
  }
  for (auto* sub : subs) sub->join();
  shut_down_ = true;
  base::log_event(*context_.log, spdlog::level::info, {{"event", "stopped"}}, "stopped");
}

nats::ConnectionEvents Fleet::Impl::connection_events() {
  return {
      .connected = [this] { on_connection(true); },
      .disconnected = [this] { on_connection(false); },
      .closed = [this](const std::string& why) { on_closed(why); },
      .async_error =
          [this](const std::string& e) {
            base::log_event(*context_.log, spdlog::level::warn,
                            {{"event", "nats-error"}, {"error", e}}, "nats: {}", e);
          },
  };
}

// The broker watch names an outage's cause; made before the connection, whose events it takes.
Result<void> Fleet::Impl::start_watch() {
  try {
    watch_ = std::make_unique<fleet::BrokerWatch>(
        fleet::BrokerWatch::Options{.servers = context_.options.servers,
                                    .probe_timeout = context_.options.connect_timeout},
        [this] {
          std::lock_guard subs_lock(subs_mu_);
          return connection_ ? connection_->last_error() : std::string();
        },
        *context_.log);
  } catch (const std::system_error& e) {
    return Result<void>(Errc::no_resources,
                        std::string("cannot start the broker watch: ") + e.what());
  }
  return {};
}

// The fatal reporter, then every declared subscription (mu_ held). A thread the system refuses
// (too many threads or too little memory for their stacks) is a start-up error in words, never
// an exception that aborts the process.
Result<void> Fleet::Impl::start_subscriptions() {
  std::string starting;
  try {
    starting = "the fatal reporter";
    reporter_.start();
    std::lock_guard subs_lock(subs_mu_);
    for (auto& [spec, handler] : work_) {
      starting = "work " + spec.name;
      subs_.push_back(make_work(spec, handler));
    }
    for (auto& [spec, handler] : broadcast_) {
      starting = "broadcast " + spec.name;
      subs_.push_back(make_broadcast(spec, handler));
    }
    for (auto& sub : subs_) {
      starting = sub->health().name;
      sub->start();
    }
  } catch (const std::system_error& e) {
    abandon_start();
    return Result<void>(Errc::no_resources,
                        "cannot start " + starting + ": " + e.what() +
                            " (lower concurrency, or raise the process's thread or memory limit)");
  }
  return {};
}

// start() could not start every thread: what did start stops again, quietly (nothing is
// reported), and the connection closes. The fleet cannot be started again.
void Fleet::Impl::abandon_start() {
  shutting_down_ = true;
  reporter_.quiet();
  std::vector<std::unique_ptr<fleet::Supervised>> subs;
  {
    std::lock_guard subs_lock(subs_mu_);
    subs.swap(subs_);
  }
  for (auto& sub : subs) sub->begin_shutdown();
  {
    std::lock_guard subs_lock(subs_mu_);
    if (connection_) connection_->shutdown(std::chrono::milliseconds(0));
  }
  subs.clear();  // each joins its own threads
  std::lock_guard once(shutdown_mu_);
  shut_down_ = true;
}

void Fleet::Impl::on_connection(bool connected) {
  if (watch_) connected ? watch_->connected() : watch_->disconnected();
  if (connected)
    base::log_event(*context_.log, spdlog::level::info, {{"event", "connected"}},
                    "connected to the broker");
  else if (!shutting_down_)
    base::log_event(*context_.log, spdlog::level::warn, {{"event", "disconnected"}},
                    "disconnected from the broker; reconnecting");
  std::lock_guard lock(subs_mu_);
  for (auto& sub : subs_) sub->connection_changed(connected);
}

void Fleet::Impl::on_closed(const std::string& why) {
  if (shutting_down_) return;
  // nats.c's last error is mostly "No server available for connection": the watch says why.
  const std::string cause = watch_ ? watch_->cause_now() : std::string();
  report_fatal("", "the connection to the broker closed and will not reconnect" +
                       (why.empty() ? std::string() : " (last error: " + why + ")") +
                       (cause.empty() ? std::string() : ": " + cause));
}

void Fleet::Impl::report_fatal(const std::string& subscription, const std::string& reason) {
  if (!started_ || shutting_down_) return;
  reporter_.report(subscription, reason);
}

}  // namespace natsfleet
