// Fleet: owns the connection and the supervised subscriptions, fans connection events out to
// them, and reports fatal states once.
#include "natsfleet/fleet.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <system_error>
#include <thread>

#include "base/log_event.h"
#include "fleet/broadcast_subscription.h"
#include "fleet/broker_watch.h"
#include "fleet/consumer_subscription.h"
#include "fleet/fleet_log.h"
#include "fleet/fleet_publisher.h"
#include "fleet/jetstream_broadcast.h"
#include "fleet/ordered/ordered_work.h"
#include "fleet/stream_declaration.h"
#include "nats/connection.h"
#include "nats/jetstream_api.h"
#include "natsfleet/redact.h"
#include "natsfleet/validate.h"

namespace natsfleet {

using fleet::Clock;

// The deadline of the shutdown ~Fleet makes when none was asked for.
constexpr std::chrono::milliseconds kCloseDeadline = std::chrono::seconds(2);

// What a Subscription handle calls through: the fleet until ~Fleet detaches it. Any thread.
class FleetLink {
 public:
  explicit FleetLink(Fleet::Impl* impl) : impl_(impl) {}
  // f(fleet), or shutting_down once the fleet is gone; calls run beside each other.
  template <typename R, typename F>
  R call(F&& f) {
    std::shared_lock lock(mu_);
    if (impl_ == nullptr) return R(Errc::shutting_down, "the fleet is gone");
    return f(*impl_);
  }
  // Later calls answer shutting_down; waits for those under way.
  void detach() {
    std::unique_lock lock(mu_);
    impl_ = nullptr;
  }

 private:
  std::shared_mutex mu_;
  Fleet::Impl* impl_;
};

class Fleet::Impl {
 public:
  explicit Impl(FleetOptions options) {
    context_.options = std::move(options);
    context_.log = fleet::make_fleet_logger(context_.options);
    context_.fatal = [this](const std::string& sub, const std::string& reason) {
      report_fatal(sub, reason);
    };
  }

  // The subscriptions' destructors wait for every handler still running.
  ~Impl() {
    shutdown(kCloseDeadline);
    {
      std::lock_guard lock(mu_);
      reporter_stop_ = true;
      reporter_wake_.notify_all();
    }
    if (reporter_.joinable()) {
      if (reporter_.get_id() == std::this_thread::get_id())
        reporter_.detach();
      else
        reporter_.join();
    }
  }

  // Shuts down (kCloseDeadline) if still running, then waits for handlers that overran until the
  // deadline of the last shutdown or remove. False when one still runs: this Impl must then be
  // freed where waiting for it harms nobody.
  bool close() {
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

  // Before start(), the work starts with the fleet; after, it starts at once. Its id.
  Result<uint64_t> add_work(WorkSpec spec, WorkHandler handler) {
    std::lock_guard lock(mu_);
    if (auto checked = validate_work(spec); !checked)
      return Result<uint64_t>(Errc::invalid_argument,
                              "work " + spec.name + ": " + checked.error().message);
    if (!handler)
      return Result<uint64_t>(Errc::invalid_argument, "work " + spec.name + ": no handler");
    if (shutting_down_) return Result<uint64_t>(Errc::shutting_down, "add_work after shutdown");
    auto id = reserve(spec.name);
    if (!id) return id;
    // From here on `subject` is the first filter subject, and `subjects` holds two or more.
    if (!spec.subjects.empty()) {
      spec.subject = spec.subjects.front();
      if (spec.subjects.size() == 1) spec.subjects.clear();
    }
    if (!started_) {
      work_.emplace_back(std::move(spec), std::move(handler));
      return id;
    }
    if (auto started = start_now(spec.name, [&] { return make_work(spec, std::move(handler)); });
        !started)
      return started.error();
    return id;
  }

  // Before start(), the broadcast starts with the fleet; after, it starts at once (a relay adds
  // its subscription when the first session attaches).
  Result<uint64_t> add_broadcast(BroadcastSpec spec, BroadcastHandler handler) {
    std::lock_guard lock(mu_);
    if (auto checked = validate_broadcast(spec); !checked)
      return Result<uint64_t>(Errc::invalid_argument,
                              "broadcast " + spec.name + ": " + checked.error().message);
    if (!handler)
      return Result<uint64_t>(Errc::invalid_argument, "broadcast " + spec.name + ": no handler");
    if (shutting_down_)
      return Result<uint64_t>(Errc::shutting_down, "add_broadcast after shutdown");
    auto id = reserve(spec.name);
    if (!id) return id;
    if (!started_) {
      broadcast_.emplace_back(std::move(spec), std::move(handler));
      return id;
    }
    if (auto started =
            start_now(spec.name, [&] { return make_broadcast(spec, std::move(handler)); });
        !started)
      return started.error();
    return id;
  }

  // This subscription's health, while `id` is the one of that name.
  Result<SubscriptionHealth> health_of(const std::string& name, uint64_t id) {
    {
      std::lock_guard lock(mu_);
      if (auto known = known_as(name, id); !known) return known.error();
      if (!started_) {
        SubscriptionHealth waiting;  // binding, as it will once the fleet starts
        waiting.name = name;
        return waiting;
      }
    }
    auto all = health();
    for (auto& sub : all.subscriptions)
      if (sub.name == name) return std::move(sub);
    return Result<SubscriptionHealth>(Errc::invalid_argument,
                                      "subscription " + name + " was removed");
  }

  const std::shared_ptr<FleetLink>& link() const { return link_; }

  // Stops one subscription as shutdown() stops them all, the connection staying up: no more
  // pulls, running handlers finish (until `deadline`) and are acked, what never started is
  // given back. Its name is free again once this returns.
  // `id`: only the subscription of that name a handle stands for.
  Result<void> remove(const std::string& name, std::chrono::milliseconds deadline,
                      std::optional<uint64_t> id = std::nullopt) {
    // One at a time, and never beside shutdown(): the connection stays up until this returns.
    std::lock_guard once(shutdown_mu_);
    const auto until = Clock::now() + deadline;
    std::unique_ptr<fleet::Supervised> sub;
    {
      std::lock_guard lock(mu_);
      if (shutting_down_) return Result<void>(Errc::shutting_down, "remove after shutdown");
      last_deadline_ = std::max(last_deadline_, until);
      if (id) {
        if (auto known = known_as(name, *id); !known) return known;
      } else if (!names_.count(name)) {
        return Result<void>(Errc::invalid_argument, "no subscription named " + name);
      }
      if (!started_) {
        std::erase_if(work_, [&](const auto& w) { return w.first.name == name; });
        std::erase_if(broadcast_, [&](const auto& b) { return b.first.name == name; });
        names_.erase(name);
        return {};
      }
      std::lock_guard subs_lock(subs_mu_);
      auto it = std::find_if(subs_.begin(), subs_.end(),
                             [&](const auto& s) { return s->health().name == name; });
      if (it == subs_.end())
        return Result<void>(Errc::invalid_argument, "no subscription named " + name);
      sub = std::move(*it);
      subs_.erase(it);
    }
    base::log_event(*context_.log, spdlog::level::info,
                    {{"event", "subscription-stopping"}, {"subscription", name}},
                    "{}: stopping (deadline {} ms)", name, deadline.count());
    sub->begin_shutdown();
    const bool finished = sub->finish_handlers(until);
    // Its acks reach the broker before a successor (the same work, reloaded) binds.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (connection_->connected() && left.count() > 0)
      (void)connection_->flush(std::min(left, std::chrono::milliseconds(1000)));
    sub->join();
    if (finished) sub.reset();  // joins its handler threads, which have all returned
    {
      std::lock_guard lock(mu_);
      names_.erase(name);
      // A handler that overran is waited for by close() until the last deadline, and by ~Impl.
      if (sub) removed_.push_back(std::move(sub));
    }
    base::log_event(*context_.log, spdlog::level::info,
                    {{"event", "subscription-stopped"}, {"subscription", name}}, "{}: stopped{}",
                    name, finished ? "" : " (a handler was still running at the deadline)");
    return {};
  }

  void on_fatal(FatalHandler handler) {
    std::lock_guard lock(mu_);
    fatal_handler_ = std::move(handler);
  }

  Result<void> start() {
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
      pending_report_.reset();
      std::lock_guard fatal_lock(fatal_mu_);
      fatal_reason_.clear();
      return conn.error();
    }
    {
      std::lock_guard subs_lock(subs_mu_);
      connection_ = std::move(conn.value());
      context_.connection = connection_.get();
    }
    if (auto running = start_subscriptions(); !running) return running;
    base::log_event(*context_.log, spdlog::level::info, {{"event", "started"}},
                    "started: {} work, {} broadcast subscription(s); connecting to {}",
                    work_.size(), broadcast_.size(), redact_urls(o.servers));
    return {};
  }

  Result<void> publish(const std::string& subject, const std::string& data,
                       const std::string& msg_id, const Headers& extra) {
    return publisher_.publish(connection_.get(), subject, data, msg_id, extra);
  }
  Result<uint64_t> publish_to_stream(const std::string& subject, const std::string& data,
                                     const std::string& msg_id, std::chrono::milliseconds timeout,
                                     const Headers& extra) {
    return publisher_.publish_to_stream(connection_.get(), subject, data, msg_id, timeout, extra);
  }
  Result<std::optional<Message>> last_stored(const std::string& stream, const std::string& subject,
                                             std::chrono::milliseconds timeout) {
    return publisher_.last_stored(connection_.get(), stream, subject, timeout);
  }

  FleetHealth health() const {
    FleetHealth h;
    {
      std::lock_guard lock(fatal_mu_);
      h.live = fatal_reason_.empty();
      h.fatal_reason = fatal_reason_;
    }
    std::lock_guard lock(subs_mu_);
    h.connected = connection_ && connection_->connected();
    if (!h.connected && watch_) h.broker_error = watch_->cause();
    h.reconnects = connection_ ? connection_->reconnects() : 0;
    h.ready = h.live && h.connected;
    for (const auto& sub : subs_) {
      h.subscriptions.push_back(sub->health());
      auto& s = h.subscriptions.back();
      // Bound means delivering: not while the broker is out of reach.
      if (s.state == SubscriptionState::bound && !h.connected) {
        s.state = SubscriptionState::recovering;
        s.last_error = "not connected to the broker" +
                       (h.broker_error.empty() ? std::string() : ": " + h.broker_error);
      }
      if (s.state != SubscriptionState::bound || s.downstream_down) h.ready = false;
    }
    return h;
  }

  void shutdown(std::chrono::milliseconds deadline) {
    std::lock_guard once(shutdown_mu_);
    if (shut_down_ || !started_) return;
    const auto until = Clock::now() + deadline;
    {
      // From here on no broadcast is added: the set below is final.
      std::lock_guard lock(mu_);
      shutting_down_ = true;
      last_deadline_ = until;
    }
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

 private:
  static nats::ConnectOptions connect_options(const FleetOptions& o) {
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

  nats::ConnectionEvents connection_events() {
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
  Result<void> start_watch() {
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
  Result<void> start_subscriptions() {
    std::string starting;
    try {
      starting = "the fatal reporter";
      // It waits for mu_, held until start() returns: a report from the connection's first
      // moments reaches the handler only after start() has succeeded.
      reporter_ = std::thread([this] { run_reporter(); });
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
      return Result<void>(
          Errc::no_resources,
          "cannot start " + starting + ": " + e.what() +
              " (lower concurrency, or raise the process's thread or memory limit)");
    }
    return {};
  }

  std::unique_ptr<fleet::Supervised> make_work(WorkSpec spec, WorkHandler handler) {
    if (spec.per_key)
      return std::make_unique<fleet::OrderedWork>(spec, std::move(handler), context_);
    fleet::ReplicaOptions replica;
    if (spec.declared_stream) {
      spec.stream = spec.declared_stream->name;
      replica.stream_to_create = fleet::declared_stream_config(spec);
    }
    return std::make_unique<fleet::ConsumerSubscription>(
        std::move(spec), std::move(handler), context_, fleet::ConsumerSubscription::Scope::shared,
        std::move(replica));
  }

  // A new subscription's name (mu_ held): its id, or invalid_argument when it is taken.
  Result<uint64_t> reserve(const std::string& name) {
    if (!names_.emplace(name, next_id_ + 1).second)
      return Result<uint64_t>(Errc::invalid_argument, "duplicate subscription name " + name);
    return ++next_id_;
  }
  // Whether `name` is the subscription `id` stands for (mu_ held).
  Result<void> known_as(const std::string& name, uint64_t id) const {
    auto it = names_.find(name);
    if (it == names_.end() || it->second != id)
      return Result<void>(Errc::invalid_argument, "subscription " + name + " was removed");
    return {};
  }

  // Makes and starts a subscription on the running fleet (mu_ held): shutdown sees it started,
  // or not at all. A thread the system refuses frees the name again.
  template <typename Make>
  Result<void> start_now(const std::string& name, Make make) {
    std::lock_guard subs_lock(subs_mu_);
    try {
      auto sub = make();
      sub->start();
      subs_.push_back(std::move(sub));
    } catch (const std::system_error& e) {
      // The subscription's own threads are gone with it (or never started).
      names_.erase(name);
      return Result<void>(Errc::no_resources, name + ": " + e.what());
    }
    return {};
  }

  std::unique_ptr<fleet::Supervised> make_broadcast(const BroadcastSpec& spec,
                                                    BroadcastHandler handler) {
    if (spec.source == BroadcastSource::core)
      return std::make_unique<fleet::BroadcastSubscription>(spec, std::move(handler), context_);
    return fleet::jetstream_broadcast(spec, std::move(handler), context_);
  }

  // start() could not start every thread: what did start stops again, quietly (nothing is
  // reported), and the connection closes. The fleet cannot be started again.
  void abandon_start() {
    shutting_down_ = true;
    std::vector<std::unique_ptr<fleet::Supervised>> subs;
    std::unique_ptr<nats::Connection> connection;
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

  void on_connection(bool connected) {
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

  void on_closed(const std::string& why) {
    if (shutting_down_) return;
    // nats.c's last error is mostly "No server available for connection": the watch says why.
    const std::string cause = watch_ ? watch_->cause_now() : std::string();
    report_fatal("", "the connection to the broker closed and will not reconnect" +
                         (why.empty() ? std::string() : " (last error: " + why + ")") +
                         (cause.empty() ? std::string() : ": " + cause));
  }

  void report_fatal(const std::string& subscription, const std::string& reason) {
    if (!started_ || shutting_down_) return;
    {
      std::lock_guard lock(fatal_mu_);
      if (!fatal_reason_.empty()) return;
      fatal_reason_ = subscription.empty() ? reason : subscription + ": " + reason;
    }
    base::log_event(*context_.log, spdlog::level::err,
                    {{"event", "fatal"}, {"subscription", subscription}, {"error", reason}},
                    "fatal: {}", subscription.empty() ? reason : subscription + ": " + reason);
    std::lock_guard lock(mu_);
    pending_report_ = FatalReport{subscription, reason};
    reporter_wake_.notify_all();
  }

  // The fatal handler runs here, off nats.c's and the supervisors' threads, so it may call
  // shutdown() without waiting on itself.
  void run_reporter() {
    std::unique_lock lock(mu_);
    reporter_wake_.wait(lock, [&] { return reporter_stop_ || pending_report_.has_value(); });
    if (!pending_report_ || shutting_down_) return;
    FatalReport report = *pending_report_;
    FatalHandler handler = fatal_handler_;
    lock.unlock();
    if (!handler) return;
    try {
      handler(report);
    } catch (const std::exception& e) {
      base::log_event(*context_.log, spdlog::level::err,
                      {{"event", "fatal-handler-threw"}, {"error", e.what()}},
                      "fatal handler threw: {}", e.what());
    }
  }

  fleet::FleetContext context_;
  std::mutex mu_;  // declarations, start, the pending fatal report
  std::vector<std::pair<WorkSpec, WorkHandler>> work_;
  std::vector<std::pair<BroadcastSpec, BroadcastHandler>> broadcast_;
  // Every subscription's name, with the id its handles carry (reserve()).
  std::map<std::string, uint64_t> names_;
  uint64_t next_id_ = 0;
  // Detached by ~Fleet before anything else.
  const std::shared_ptr<FleetLink> link_ = std::make_shared<FleetLink>(this);
  // Removed while a handler of theirs overran the deadline: kept until ~Impl has waited.
  std::vector<std::unique_ptr<fleet::Supervised>> removed_;
  Clock::time_point last_deadline_{};  // of the last shutdown() or remove(): close() waits to it
  FatalHandler fatal_handler_;
  std::optional<FatalReport> pending_report_;
  std::condition_variable reporter_wake_;
  bool reporter_stop_ = false;
  std::thread reporter_;

  std::atomic<bool> started_{false};
  std::atomic<bool> shutting_down_{false};
  std::mutex shutdown_mu_;
  bool shut_down_ = false;

  mutable std::mutex fatal_mu_;
  std::string fatal_reason_;

  mutable std::mutex subs_mu_;
  std::unique_ptr<nats::Connection> connection_;
  std::vector<std::unique_ptr<fleet::Supervised>> subs_;
  // Made in start() before the connection, kept until the end (its events may come any time).
  std::unique_ptr<fleet::BrokerWatch> watch_;

  fleet::FleetPublisher publisher_;
};

Fleet::Fleet(FleetOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Fleet::~Fleet() {
  impl_->link()->detach();  // a handle's calls answer shutting_down from here on
  if (impl_->close()) return;
  // A handler overran the deadline: what it uses is freed once it returns, on a thread of its
  // own. Without a thread to spare the lambda is destroyed here, which waits for it.
  try {
    std::thread([impl = std::move(impl_)]() mutable { impl.reset(); }).detach();
  } catch (const std::system_error&) {
  }
}
Result<Subscription> Fleet::add_work(WorkSpec spec, WorkHandler handler) {
  std::string name = spec.name;
  auto id = impl_->add_work(std::move(spec), std::move(handler));
  if (!id) return id.error();
  return Subscription(impl_->link(), std::move(name), *id);
}
Result<Subscription> Fleet::add_broadcast(BroadcastSpec spec, BroadcastHandler handler) {
  std::string name = spec.name;
  auto id = impl_->add_broadcast(std::move(spec), std::move(handler));
  if (!id) return id.error();
  return Subscription(impl_->link(), std::move(name), *id);
}
Result<void> Fleet::remove(const std::string& name, std::chrono::milliseconds deadline) {
  return impl_->remove(name, deadline);
}
void Fleet::on_fatal(FatalHandler handler) { impl_->on_fatal(std::move(handler)); }
Result<void> Fleet::start() { return impl_->start(); }
Result<void> Fleet::publish(const std::string& subject, const std::string& data,
                            const std::string& msg_id, const Headers& headers) {
  return impl_->publish(subject, data, msg_id, headers);
}
Result<uint64_t> Fleet::publish_to_stream(const std::string& subject, const std::string& data,
                                          const std::string& msg_id,
                                          std::chrono::milliseconds timeout,
                                          const Headers& headers) {
  return impl_->publish_to_stream(subject, data, msg_id, timeout, headers);
}
Result<std::optional<Message>> Fleet::last_stored(const std::string& stream,
                                                  const std::string& subject,
                                                  std::chrono::milliseconds timeout) {
  return impl_->last_stored(stream, subject, timeout);
}
FleetHealth Fleet::health() const { return impl_->health(); }

namespace {
Error no_subscription() {
  return Error{make_error_code(Errc::invalid_argument),
               "this Subscription was made by default and stands for none"};
}
}  // namespace

Result<void> Subscription::drain(std::chrono::milliseconds deadline) const {
  if (!link_) return no_subscription();
  return link_->call<Result<void>>(
      [&](Fleet::Impl& fleet) { return fleet.remove(name_, deadline, id_); });
}
Result<void> Subscription::stop() const { return drain(std::chrono::milliseconds(0)); }
Result<SubscriptionHealth> Subscription::health() const {
  if (!link_) return no_subscription();
  return link_->call<Result<SubscriptionHealth>>(
      [&](Fleet::Impl& fleet) { return fleet.health_of(name_, id_); });
}
void Fleet::shutdown(std::chrono::milliseconds deadline) { impl_->shutdown(deadline); }

}  // namespace natsfleet
