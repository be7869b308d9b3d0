#include <set>
#include <string>

#include "base/log_event.h"
#include "daemon/daemon_state.h"
#include "daemon/reload_plan.h"
#include "fleet/ordered/partition_plan.h"

namespace natsfleet::daemon {
namespace {

// Stops one running subscription as a shutdown would (in-flight messages finish and are acked,
// buffered ones given back), then its sink. The sink object stays until the daemon ends.
void stop_subscription(Daemon::State& s, const std::string& name) {
  sinks::Sink* sink = nullptr;
  {
    std::lock_guard lock(s.sinks_mu);
    if (auto it = s.sink_of.find(name); it != s.sink_of.end()) sink = it->second;
  }
  if (sink) sink->begin_stop();
  if (auto removed = s.fleet->remove(name, s.config.shutdown_timeout); !removed)
    base::log_event(*s.log, spdlog::level::warn, {{"event", "reload"}, {"subscription", name}},
                    "reload: {}: {}", name, removed.error().describe());
  if (sink) sink->stop();
  std::lock_guard lock(s.sinks_mu);
  s.sink_of.erase(name);
}

const config::WorkConfig* find_work(const config::DaemonConfig& c, const std::string& name) {
  for (const auto& w : c.work)
    if (w.spec.name == name) return &w;
  return nullptr;
}

const config::BroadcastConfig* find_broadcast(const config::DaemonConfig& c,
                                              const std::string& name) {
  for (const auto& b : c.broadcast)
    if (b.spec.name == name) return &b;
  return nullptr;
}

// Starts `name` as `c` defines it.
Result<void> start_named(Daemon::State& s, const config::DaemonConfig& c, const std::string& name,
                         const DescriptorBudget& budget) {
  if (const auto* w = find_work(c, name)) return start_work(s, *w);
  if (const auto* b = find_broadcast(c, name)) return start_broadcast(s, *b, budget);
  return Result<void>(Errc::invalid_argument, "no subscription named " + name);
}

// On the embedded broker, per-key work needs a subject mapping the broker was given when it
// started: an error (invalid_argument) when `work` is per-key and the broker lacks its mapping.
Result<void> mapping_present(const Daemon::State& s, const config::WorkConfig& work) {
  if (!s.broker || !work.spec.per_key) return {};
  auto plan = fleet::PartitionPlan::of(work.spec);
  if (!plan) return {};
  const std::pair<std::string, std::string> mapping{plan->source(), plan->destination()};
  for (const auto& m : s.broker_mappings)
    if (m == mapping) return {};
  return Error{Errc::invalid_argument,
               "work " + work.spec.name +
                   ": per-key work needs the embedded broker's subject mapping, which is set when "
                   "the broker starts: restart natsfleet to start it"};
}

// The config file read again, or nothing (logged) when it fails to load.
std::optional<config::DaemonConfig> read_config_again(Daemon::State& s) {
  base::log_event(*s.log, spdlog::level::info, {{"event", "reload-requested"}},
                  "reload requested: reading {}", s.config.file);
  auto config = config::load_config(s.config.file);
  if (config) return std::move(*config);
  const char* why = config.error().what();
  base::log_event(*s.log, spdlog::level::err, {{"event", "reload-failed"}, {"error", why}},
                  "reload: {}; the running config is kept", why);
  return std::nullopt;
}

// What runs after a reload, in the new config's order, and how the starts went.
struct Running {
  std::vector<config::WorkConfig> work;
  std::vector<config::BroadcastConfig> broadcast;
  size_t started = 0, failed = 0;

  void add(const config::DaemonConfig& c, const std::string& name) {
    if (const auto* w = find_work(c, name)) work.push_back(*w);
    if (const auto* b = find_broadcast(c, name)) broadcast.push_back(*b);
  }
};

// Starts `name` as `next` defines it; when that fails and it ran before the reload (`was_running`),
// starts it again as `before` defined it.
void start_or_restore(Daemon::State& s, const config::DaemonConfig& next,
                      const config::DaemonConfig& before, const std::string& name, bool was_running,
                      const DescriptorBudget& budget, Running& running) {
  const auto* work = find_work(next, name);
  auto started = work ? mapping_present(s, *work) : Result<void>{};
  if (started) started = start_named(s, next, name, budget);
  if (started) {
    running.add(next, name);
    ++running.started;
    return;
  }
  const std::string problem = started.error().describe();
  ++running.failed;
  base::log_event(*s.log, spdlog::level::err,
                  {{"event", "reload-failed"}, {"subscription", name}, {"error", problem}},
                  "reload: {}: {}{}", name, problem, was_running ? "; starting it as it was" : "");
  if (!was_running) return;
  if (auto again = start_named(s, before, name, budget); again)
    running.add(before, name);
  else
    base::log_event(
        *s.log, spdlog::level::err, {{"event", "reload-failed"}, {"subscription", name}},
        "reload: {}: cannot start it as it was either: {}", name, again.error().describe());
}

}  // namespace

void reload(Daemon::State& s) {
  auto& log = *s.log;
  const auto next = read_config_again(s);
  if (!next) return;
  const ReloadPlan plan = plan_reload(s.config, *next);
  for (const auto& key : plan.restart_only)
    base::log_event(log, spdlog::level::warn, {{"event", "reload-restart-only"}, {"key", key}},
                    "reload: {} changed; it takes effect at the next start (the running value "
                    "is kept)",
                    key);
  if (s.broker && !plan.start.empty() && !ensure_streams(s.broker->url(), *next, log))
    base::log_event(log, spdlog::level::err, {{"event", "reload-failed"}},
                    "reload: the embedded broker's streams could not be made; subscriptions "
                    "without a stream wait for one");
  const config::DaemonConfig before = s.config;
  s.config.shutdown_timeout = next->shutdown_timeout;
  for (const auto& name : plan.stop) stop_subscription(s, name);
  const DescriptorBudget budget =
      plan_descriptors(descriptor_limit(), *next, health::HealthServerOptions{}.max_connections,
                       s.broker != nullptr);
  const std::set<std::string> to_start(plan.start.begin(), plan.start.end());
  const std::set<std::string> stopped(plan.stop.begin(), plan.stop.end());
  Running running;
  for (const auto& name : subscription_names(*next)) {
    if (to_start.count(name))
      start_or_restore(s, *next, before, name, stopped.count(name) > 0, budget, running);
    else
      running.add(*next, name);
  }
  s.config.work = std::move(running.work);
  s.config.broadcast = std::move(running.broadcast);
  base::log_event(log, spdlog::level::info,
                  {{"event", "reloaded"},
                   {"started", static_cast<int64_t>(running.started)},
                   {"stopped", static_cast<int64_t>(plan.stop.size())},
                   {"unchanged", static_cast<int64_t>(plan.unchanged)},
                   {"failed", static_cast<int64_t>(running.failed)}},
                  "reloaded: {} started, {} stopped, {} unchanged, {} failed", running.started,
                  plan.stop.size(), plan.unchanged, running.failed);
}

}  // namespace natsfleet::daemon
