#include "daemon/reload_plan.h"

#include <map>

namespace natsfleet::daemon {

namespace {

// Every subscription's definition by name ("work" or "broadcast" is part of it).
std::map<std::string, std::string> definitions(const config::DaemonConfig& c) {
  std::map<std::string, std::string> out;
  for (const auto& w : c.work) out[w.spec.name] = "work\n" + w.definition;
  for (const auto& b : c.broadcast) out[b.spec.name] = "broadcast\n" + b.definition;
  return out;
}

std::vector<std::string> restart_only_changes(const config::DaemonConfig& a,
                                              const config::DaemonConfig& b) {
  std::vector<std::string> out;
  auto differs = [&](const char* key, bool changed) {
    if (changed) out.emplace_back(key);
  };
  const FleetOptions& x = a.fleet;
  const FleetOptions& y = b.fleet;
  differs("name", x.name != y.name);
  differs("servers", x.servers != y.servers);
  differs("credentials", x.credentials_file != y.credentials_file);
  differs("user", x.auth.user != y.auth.user);
  differs("password_file", x.auth.password_file != y.auth.password_file);
  differs("token_file", x.auth.token_file != y.auth.token_file);
  differs("nkey", x.auth.nkey_seed_file != y.auth.nkey_seed_file);
  differs("tls.ca", x.tls.ca != y.tls.ca);
  differs("tls.cert", x.tls.cert != y.tls.cert);
  differs("tls.key", x.tls.key != y.tls.key);
  differs("health.listen", a.health_listen != b.health_listen);
  differs("log_format", a.log_format != b.log_format);
  differs("log_level", a.log_level != b.log_level);
  return out;
}

}  // namespace

std::vector<std::string> subscription_names(const config::DaemonConfig& c) {
  std::vector<std::string> out;
  for (const auto& w : c.work) out.push_back(w.spec.name);
  for (const auto& b : c.broadcast) out.push_back(b.spec.name);
  return out;
}

ReloadPlan plan_reload(const config::DaemonConfig& running, const config::DaemonConfig& next) {
  ReloadPlan plan;
  const auto before = definitions(running);
  const auto after = definitions(next);
  for (const auto& name : subscription_names(running)) {
    auto it = after.find(name);
    if (it == after.end() || it->second != before.at(name)) plan.stop.push_back(name);
  }
  for (const auto& name : subscription_names(next)) {
    auto it = before.find(name);
    if (it == before.end() || it->second != after.at(name))
      plan.start.push_back(name);
    else
      ++plan.unchanged;
  }
  plan.restart_only = restart_only_changes(running, next);
  return plan;
}

}  // namespace natsfleet::daemon
