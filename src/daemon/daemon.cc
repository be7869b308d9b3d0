#include "daemon/daemon.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <shared_mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <variant>

#include "base/endpoint.h"
#include "base/log_event.h"
#include "broker/embedded_broker.h"
#include "daemon/daemon_state.h"
#include "daemon/descriptor_budget.h"
#include "daemon/reload_plan.h"
#include "daemon/service_notifier.h"
#include "fleet/consumer_shape.h"
#include "fleet/ordered/partition_plan.h"
#include "health/daemon_metrics.h"
#include "health/health_server.h"
#include "nats/connection.h"
#include "nats/jetstream_api.h"
#include "natsfleet/fleet.h"
#include "natsfleet/redact.h"
#include "sinks/sink.h"
#include "sinks/websocket_sink.h"

namespace natsfleet::daemon {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// Every gateway's counters, for /metrics.
health::ServerMetrics gateway_metrics(const Daemon::State& s) {
  health::ServerMetrics out;
  std::lock_guard lock(s.sinks_mu);
  for (const auto& [name, sink] : s.sink_of) {
    const auto* ws = dynamic_cast<const sinks::WebSocketSink*>(sink);
    if (!ws) continue;
    const relay::GatewayStats g = ws->stats();
    out.http.push_back({.server = name,
                        .connections = g.http_connections,
                        .cut_idle = g.cut_idle,
                        .cut_slow = g.cut_slow,
                        .evicted = g.evicted,
                        .refused_busy = g.refused_busy});
    out.gateways.push_back({.server = name,
                            .sessions = g.sessions,
                            .max_sessions = ws->max_sessions(),
                            .attached = g.attached,
                            .refused = {{"member", g.refused_member},
                                        {"origin", g.refused_origin},
                                        {"unauthenticated", g.refused_unauthenticated},
                                        {"expired", g.refused_expired},
                                        {"bad_token", g.refused_bad_token},
                                        {"member_mismatch", g.refused_member_mismatch},
                                        {"full", g.refused_full}},
                            .dropped_slow = g.dropped_slow,
                            .closed_idle = g.closed_idle});
  }
  return out;
}

// Loud, because the default is open: without a token secret or a proxy's header, the member a
// caller names is believed.
void warn_unauthenticated(const config::BroadcastConfig& bc, spdlog::logger& log) {
  const auto* websocket = std::get_if<sinks::WebSocketSinkOptions>(&bc.sink);
  if (!websocket || !websocket->token_secret_file.empty() || !websocket->member_header.empty())
    return;
  const bool loopback = base::is_loopback_host(websocket->host);
  base::log_event(
      log, spdlog::level::warn, {{"event", "warning"}},
      "broadcast {}: the websocket gateway on {} has NO MEMBER AUTHENTICATION: any caller that "
      "can reach it reads any member's statuses by naming the member (/ws?member=<id>){}. Set "
      "token_secret_file (signed member tokens) or member_header (an authenticating proxy) in "
      "its sink",
      bc.spec.name, sinks::listen_address(*websocket),
      loopback ? "; it listens on loopback only, so only this machine can reach it"
               : "; it listens beyond loopback");
}

// Per-key ordered work needs the broker to map its subject to partitions: source, destination.
std::vector<std::pair<std::string, std::string>> partition_mappings(
    const config::DaemonConfig& cfg) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& work : cfg.work)
    if (work.spec.per_key)
      if (auto plan = fleet::PartitionPlan::of(work.spec))
        out.emplace_back(plan->source(), plan->destination());
  return out;
}

// The embedded broker keeps its store and its port beside the config, so a restarted daemon
// finds its messages and clients find it where it was.
std::unique_ptr<broker::EmbeddedBroker> start_embedded_broker(const config::DaemonConfig& cfg,
                                                              spdlog::logger& log) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(cfg.file).parent_path();
  if (dir.empty()) dir = ".";
  dir = fs::absolute(dir / ".natsfleet" / cfg.fleet.name / "broker").lexically_normal();
  std::error_code ec;
  fs::create_directories(dir, ec);
  int port = 0;
  if (std::ifstream in(dir / "port"); in) in >> port;
  broker::EmbeddedBrokerOptions options;
  options.state_dir = dir.string();
  options.port = port;
  options.mappings = partition_mappings(cfg);
  auto b = std::make_unique<broker::EmbeddedBroker>(options);
  auto started = b->start();
  if (!started && port != 0) {
    // The remembered port is taken: pick another.
    options.port = 0;
    b = std::make_unique<broker::EmbeddedBroker>(options);
    started = b->start();
  }
  if (!started) {
    base::log_event(log, spdlog::level::err, {{"event", "embedded-broker-failed"}},
                    "cannot start the embedded broker: {}", started.error().describe());
    return nullptr;
  }
  std::ofstream(dir / "port") << b->port() << "\n";
  base::log_event(log, spdlog::level::info, {{"event", "embedded-broker"}},
                  "no servers configured: embedded nats-server with JetStream on {}, state in {}",
                  b->url(), b->state_dir());
  return b;
}

// Stored publishes wait for the stream's ack and carry the message id (a redelivery does not
// publish twice); a subject the broker says no stream holds (a relay's status, say) goes out as
// plain NATS. Any other failure means the publish may be lost: the caller retries the source.
constexpr std::chrono::milliseconds kPublishTimeout = 5s;
// What a handler's stored publishes may add to its sink's timeout.
constexpr std::chrono::milliseconds kPublishMargin = 30s;

Result<void> publish_all(Fleet& fleet, const std::vector<sinks::Publish>& messages) {
  for (const auto& p : messages) {
    auto stored = fleet.publish_to_stream(p.subject, p.data, p.msg_id, kPublishTimeout);
    if (stored) continue;
    if (stored.error().code == Errc::no_stream_for_subject) {
      if (auto sent = fleet.publish(p.subject, p.data, p.msg_id); sent) continue;
    }
    return Error{stored.error().code, "publish to " + p.subject + ": " + stored.error().describe()};
  }
  return {};
}

// Hands a message to its sink and, when the sink took it, publishes what the worker asked for
// (stored before the source is settled): a publish that did not make it is a retry, the stream
// being the downstream too. Counts the outcome.
sinks::SinkResult deliver_and_publish(Fleet& fleet, health::SubscriptionMetrics& metrics,
                                      sinks::Sink& sink, const std::string& name,
                                      const Message& m) {
  const auto started = Clock::now();
  sinks::SinkResult result = sink.deliver(m, name);
  if (result.disposition.kind() == Disposition::Kind::ack) {
    if (auto published = publish_all(fleet, result.publish); !published) {
      result.disposition = Disposition::retry();
      result.error = published.error().describe();
    } else {
      metrics.count_published(result.publish.size());
    }
  }
  if (!result.error.empty()) metrics.count_sink_error();
  metrics.observe(Clock::now() - started, result.disposition.kind());
  return result;
}

}  // namespace

// The fleet's health, where a sink that cannot take messages (a crash-looping worker) makes its
// subscription stalled: bound to the broker, but making no progress.
FleetHealth health_with_sinks(const Daemon::State& s);

Daemon::Daemon(config::DaemonConfig config, std::vector<std::string> servers)
    : state_(std::make_unique<State>()) {
  state_->config = std::move(config);
  state_->server_overrides = std::move(servers);
  state_->log = spdlog::default_logger()->clone(state_->config.fleet.name);
}

Daemon::~Daemon() = default;

FleetHealth health_with_sinks(const Daemon::State& s) {
  FleetHealth h = s.fleet->health();
  std::lock_guard lock(s.sinks_mu);
  for (auto& sub : h.subscriptions) {
    auto it = s.sink_of.find(sub.name);
    if (it == s.sink_of.end()) continue;
    if (sub.downstream_down) {
      // Already not ready, with the sink's last error.
      sub.downstream_error = "sink " + it->second->describe() + ": " + sub.downstream_error;
      if (!it->second->healthy()) sub.downstream_error += " (the sink reports itself unhealthy)";
      continue;
    }
    if (it->second->healthy()) continue;
    // A sink that knows it is broken (a crash-looping worker) before any message failed.
    if (sub.state == SubscriptionState::bound) sub.state = SubscriptionState::stalled;
    sub.last_error = "sink " + it->second->describe() + " is unhealthy";
    h.ready = false;
  }
  // What /healthz, /readyz and /status show: errors quote URLs (a sink's, nats.c's server).
  h.fatal_reason = redact(h.fatal_reason);
  for (auto& sub : h.subscriptions) {
    sub.last_error = redact(sub.last_error);
    sub.downstream_error = redact(sub.downstream_error);
  }
  return h;
}

// One line for `systemctl status`: ready, or the first subscription that is not and why.
std::string status_line(const FleetHealth& h) {
  if (!h.live) return "fatal: " + h.fatal_reason;
  if (!h.connected) return "not ready: not connected to the broker";
  for (const auto& sub : h.subscriptions) {
    if (sub.downstream_down) return "not ready: " + sub.name + ": " + sub.downstream_error;
    if (sub.state != SubscriptionState::bound)
      return "not ready: " + sub.name + " " + to_string(sub.state) +
             (sub.last_error.empty() ? "" : ": " + sub.last_error);
  }
  return h.ready ? "ready: " + std::to_string(h.subscriptions.size()) + " subscriptions bound"
                 : "not ready";
}

namespace {

// What the fleet answered to adding subscription `name` decides its sink's fate: kept for it
// (until the daemon ends), or stopped again. Returns that answer.
Result<void> keep_sink(Daemon::State& s, const std::string& name, std::unique_ptr<sinks::Sink> sink,
                       const Result<Subscription>& added) {
  if (!added) {
    sink->stop();
    return added.error();
  }
  std::lock_guard lock(s.sinks_mu);
  s.sink_of[name] = sink.get();
  s.sinks.push_back(std::move(sink));
  return {};
}

}  // namespace

bool ensure_streams(const std::string& url, const config::DaemonConfig& cfg, spdlog::logger& log) {
  nats::ConnectOptions options;
  options.servers = {url};
  options.name = cfg.fleet.name + "-setup";
  auto conn = nats::Connection::open(options, {});
  if (!conn) return false;
  const auto until = Clock::now() + 10s;
  while (!conn.value()->connected() && Clock::now() < until) std::this_thread::sleep_for(20ms);
  nats::JetStreamApi api(*conn.value(), 2s);
  auto create = [&](const std::string& name, const std::vector<std::string>& subjects) {
    const auto described = fleet::describe_subjects(subjects);
    if (auto made = api.create_stream({.name = name, .subjects = subjects}); !made) {
      base::log_event(log, spdlog::level::err, {{"event", "embedded-broker-failed"}},
                      "embedded broker: cannot create stream {} for {}: {}", name, described,
                      made.error().describe());
      return false;
    }
    base::log_event(log, spdlog::level::info, {{"event", "stream-created"}},
                    "embedded broker: created stream {} for subject {}", name, described);
    return true;
  };
  for (const auto& work : cfg.work) {
    auto subjects = fleet::filter_subjects(work.spec);
    // Per-key ordered work is stored under its partitioned subjects
    // (fleet/ordered/partition_plan.h).
    if (work.spec.per_key)
      if (auto plan = fleet::PartitionPlan::of(work.spec)) subjects = {plan->stored_subjects()};
    auto held = api.find_stream(subjects.front());
    std::string name = held ? *held : work.spec.stream;
    if (name.empty()) {
      name = work.spec.name;
      for (char& c : name) c = c == '-' ? '_' : static_cast<char>(std::toupper(c));
    }
    if (!held && !create(name, subjects)) return false;
    // The work's dead letters get a stream of their own: a terminated message is only let go once
    // a stream has stored its copy.
    if (!work.spec.failure.dead_letter.empty() && !api.find_stream(work.spec.failure.dead_letter) &&
        !create(name + "_DEAD_LETTERS", {work.spec.failure.dead_letter}))
      return false;
  }
  conn.value()->shutdown(1s);
  return true;
}

Result<void> start_work(Daemon::State& s, const config::WorkConfig& work) {
  auto made = sinks::make_sink(work.sink);
  if (!made)
    return Error{made.error().code, "work " + work.spec.name + ": " + made.error().describe()};
  sinks::Sink* sink = made.value().get();
  const std::string name = work.spec.name;
  WorkSpec spec = work.spec;
  // These sinks end a delivery themselves after their timeout (a wedged worker is killed):
  // keep a message alive that long, plus time for the stored publishes it asks for.
  if (auto timeout = sinks::delivery_timeout(work.sink))
    spec.flow.keep_alive_limit = *timeout + kPublishMargin;
  health::SubscriptionMetrics& metrics = s.metrics.register_subscription(name);
  Fleet& fleet = *s.fleet;
  auto added = fleet.add_work(spec, [&s, &metrics, &fleet, sink, name](const Message& m) {
    std::shared_lock running(s.handlers_running);
    auto result = deliver_and_publish(fleet, metrics, *sink, name, m);
    return std::move(result.disposition).because(std::move(result.error));
  });
  if (auto kept = keep_sink(s, name, std::move(made).value(), added); !kept) return kept;
  base::log_event(*s.log, spdlog::level::info, {{"event", "work"}, {"work", name}},
                  "work {}: {} -> {}", name,
                  fleet::describe_subjects(fleet::filter_subjects(work.spec)), sink->describe());
  return {};
}

Result<void> start_broadcast(Daemon::State& s, const config::BroadcastConfig& bc,
                             const DescriptorBudget& budget) {
  sinks::SinkConfig sink_config = bc.sink;
  if (auto* websocket = std::get_if<sinks::WebSocketSinkOptions>(&sink_config)) {
    for (const auto& g : budget.gateways) {
      if (g.subscription != bc.spec.name) continue;
      websocket->max_sessions = g.max_sessions;
      websocket->max_http_connections = g.http_connections;
    }
  }
  warn_unauthenticated(bc, *s.log);
  auto made = sinks::make_sink(sink_config);
  if (!made)
    return Error{made.error().code, "broadcast " + bc.spec.name + ": " + made.error().describe()};
  sinks::Sink* sink = made.value().get();
  const std::string name = bc.spec.name;
  health::SubscriptionMetrics& metrics = s.metrics.register_subscription(name);
  Fleet& fleet = *s.fleet;
  const bool redeliverable = bc.spec.source == BroadcastSource::jetstream;
  auto added = fleet.add_broadcast(
      bc.spec, [&s, &metrics, &fleet, sink, name, redeliverable](const Message& m) {
        std::shared_lock running(s.handlers_running);
        auto result = deliver_and_publish(fleet, metrics, *sink, name, m);
        if (result.error.empty()) return;
        SPDLOG_LOGGER_DEBUG(s.log, "broadcast {}: sink: {}", name, result.error);
        // The downstream is away: the fleet retries this message (a core one in place, while
        // its bounded queue keeps the newest). A rejection is counted; a JetStream broadcast
        // message comes back for another try, up to max_deliver.
        if (result.disposition.kind() == Disposition::Kind::retry)
          throw DownstreamUnavailable(result.error, result.disposition.delay());
        if (redeliverable) throw std::runtime_error(result.error);
      });
  if (auto kept = keep_sink(s, name, std::move(made).value(), added); !kept) return kept;
  base::log_event(*s.log, spdlog::level::info, {{"event", "broadcast"}, {"broadcast", name}},
                  "broadcast {}: {} -> {}", name, bc.spec.subject, sink->describe());
  return {};
}

// Until a stop is requested: tells the service manager when every subscription is first bound
// (READY=1), and, while the fleet answers for its health and is live, that it is alive
// (WATCHDOG=1): a wedged or fatal fleet stops the pings and the manager restarts the process.
// A reload request is carried out here, between RELOADING=1 and READY=1.
void serve_until_stopped(Daemon::State& s, StopRequest& stop, const ServiceNotifier& notifier) {
  std::chrono::microseconds tick = 1s;
  if (auto watchdog = notifier.watchdog()) tick = std::min(tick, *watchdog / 3);
  bool ready_said = false;
  bool failure_said = false;
  std::string status_said;
  auto notify = [&](const std::string& message) {
    if (message.empty() || !notifier.enabled()) return;
    auto sent = notifier.send(message);
    if (!sent && !failure_said)
      base::log_event(*s.log, spdlog::level::warn,
                      {{"event", "notify-failed"}, {"error", sent.error().describe()}}, "{}",
                      sent.error().describe());
    failure_said = failure_said || !sent;
  };
  for (;;) {
    if (notifier.enabled()) {
      const FleetHealth h = health_with_sinks(s);
      std::string message;
      if (h.live && notifier.watchdog()) message += "WATCHDOG=1\n";
      if (h.ready && !ready_said) message += "READY=1\n";
      if (std::string status = status_line(h); status != status_said) {
        message += "STATUS=" + status + "\n";
        status_said = std::move(status);
      }
      ready_said = ready_said || h.ready;
      notify(message);
    }
    // Until ready, a short wait: the manager (and whoever waits on `systemctl start`) learns of
    // the binding soon after it happens. Without a manager, only a request wakes this.
    const std::chrono::microseconds wait =
        !notifier.enabled() ? std::chrono::microseconds(std::chrono::hours(24))
        : ready_said        ? tick
                            : std::min<std::chrono::microseconds>(tick, 100ms);
    if (stop.wait_for(wait)) return;
    if (!stop.take_reload()) continue;
    const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now().time_since_epoch());
    notify("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(now.count()) +
           "\nSTATUS=reloading the config\n");
    reload(s);
    notify("READY=1\n");
    status_said.clear();
  }
}

namespace {

// The servers to connect to: --server, else the config's, else an embedded broker started here
// with the streams the config declares. kExitOk, or the exit code.
int choose_servers(Daemon::State& s, FleetOptions& options) {
  if (!s.server_overrides.empty()) options.servers = s.server_overrides;
  if (!options.servers.empty()) return kExitOk;
  s.broker = start_embedded_broker(s.config, *s.log);
  if (!s.broker) return kExitFatal;
  s.broker_mappings = partition_mappings(s.config);
  if (!ensure_streams(s.broker->url(), s.config, *s.log)) return kExitFatal;
  options.servers = {s.broker->url()};
  return kExitOk;
}

// Sessions are bounded by what the descriptor limit leaves once the broker connection, the
// health endpoints and the sinks have theirs; said when there are gateways.
DescriptorBudget plan_budget(const Daemon::State& s) {
  const health::HealthServerOptions health_defaults;
  DescriptorBudget budget = plan_descriptors(descriptor_limit(), s.config,
                                             health_defaults.max_connections, s.broker != nullptr);
  if (!budget.gateways.empty()) {
    const bool over = std::any_of(budget.gateways.begin(), budget.gateways.end(),
                                  [](const auto& g) { return g.over_limit; });
    base::log_event(*s.log, budget.starved || over ? spdlog::level::err : spdlog::level::info,
                    {{"event", "descriptors"}}, "{}", budget.explanation);
  }
  return budget;
}

// Every [[work]] and [[broadcast]] added to the fleet. A subscription that cannot be set up is
// the config's fault (exit 2), unless the system refused it a thread (exit 70).
int start_subscriptions(Daemon::State& s, const DescriptorBudget& budget) {
  auto cannot_start = [&](const Error& error) {
    if (error.code == Errc::no_resources) {
      base::log_event(*s.log, spdlog::level::err, {{"event", "cannot-start"}},
                      "cannot start {} (raise the process's thread or memory limit)",
                      error.describe());
      return kExitFatal;
    }
    base::log_event(*s.log, spdlog::level::err, {{"event", "cannot-start"}}, "{}: {}",
                    s.config.file, error.describe());
    return kExitUsage;
  };
  for (const auto& work : s.config.work)
    if (auto started = start_work(s, work); !started) return cannot_start(started.error());
  for (const auto& bc : s.config.broadcast)
    if (auto started = start_broadcast(s, bc, budget); !started)
      return cannot_start(started.error());
  return kExitOk;
}

// /healthz /readyz /metrics /status, when [health] listen is set. kExitOk, or kExitFatal.
int start_health(Daemon::State& s) {
  if (s.config.health_listen.empty()) return kExitOk;
  health::HealthServerOptions health_options;
  health_options.listen = s.config.health_listen;
  health_options.server_metrics = [&s] { return gateway_metrics(s); };
  s.health_server = std::make_unique<health::HealthServer>(
      health_options, [&s] { return health_with_sinks(s); }, s.metrics, s.config.fleet.name);
  try {
    if (auto started = s.health_server->start(); !started) {
      base::log_event(*s.log, spdlog::level::err, {{"event", "health-failed"}},
                      "health endpoints: {}", started.error().describe());
      return kExitFatal;
    }
  } catch (const std::system_error& e) {
    base::log_event(*s.log, spdlog::level::err, {{"event", "health-failed"}},
                    "health endpoints: cannot start their thread: {}", e.what());
    return kExitFatal;
  }
  base::log_event(
      *s.log, spdlog::level::info, {{"event", "health-endpoints"}, {"server", "health"}},
      "health endpoints on http://{}:{} (/healthz /readyz /metrics /status)",
      s.config.health_listen.substr(0, s.config.health_listen.rfind(':')), s.health_server->port());
  return kExitOk;
}

// Says why it stops (`fatal`, or a stop request), then stops in order: sinks told, the fleet
// shut down within shutdown_timeout, sinks stopped, health endpoints, the embedded broker.
void shut_down(Daemon::State& s, const std::string& fatal, const ServiceNotifier& notifier) {
  if (fatal.empty())
    base::log_event(*s.log, spdlog::level::info, {{"event", "stop-requested"}},
                    "stop requested: shutting down within {} ms",
                    s.config.shutdown_timeout.count());
  else
    base::log_event(*s.log, spdlog::level::err, {{"event", "fatal"}},
                    "fatal: {}; exiting with {} so the orchestrator restarts this process", fatal,
                    kExitFatal);
  (void)notifier.send("STOPPING=1\nSTATUS=" +
                      (fatal.empty() ? std::string("stopping") : "fatal: " + redact(fatal)));
  // Nothing waits for a worker to come back once shutdown has begun; work in progress goes on.
  for (auto& sink : s.sinks) sink->begin_stop();
  s.fleet->shutdown(s.config.shutdown_timeout);
  // Stopping the sinks cancels what a handler that overran the deadline still waits on; it is
  // waited for here, before the fleet, the metrics and the sinks it uses go away.
  for (auto& sink : s.sinks) sink->stop();
  { std::unique_lock every_handler_returned(s.handlers_running); }
  if (s.health_server) s.health_server->stop();
  s.fleet.reset();
  if (s.broker) s.broker->stop();
}

}  // namespace

int Daemon::run(StopRequest& stop) {
  State& s = *state_;
  FleetOptions options = s.config.fleet;
  if (const int code = choose_servers(s, options); code != kExitOk) return code;
  s.fleet = std::make_unique<Fleet>(options);
  if (const int code = start_subscriptions(s, plan_budget(s)); code != kExitOk) return code;
  s.fleet->on_fatal([&s, &stop](const FatalReport& report) {
    {
      std::lock_guard lock(stop.mu_);
      s.fatal_reason =
          report.subscription.empty() ? report.reason : report.subscription + ": " + report.reason;
    }
    stop.request();
  });
  if (const int code = start_health(s); code != kExitOk) return code;
  if (auto started = s.fleet->start(); !started) {
    base::log_event(*s.log, spdlog::level::err, {{"event", "cannot-start"}}, "cannot start: {}",
                    started.error().describe());
    // A thread the system refused is the machine's state, not the config's.
    return started.error().code == Errc::no_resources ? kExitFatal : kExitUsage;
  }
  const ServiceNotifier notifier = ServiceNotifier::from_environment();
  serve_until_stopped(s, stop, notifier);
  std::string fatal;
  {
    std::lock_guard lock(stop.mu_);
    fatal = s.fatal_reason;
  }
  shut_down(s, fatal, notifier);
  return fatal.empty() ? kExitOk : kExitFatal;
}

}  // namespace natsfleet::daemon
