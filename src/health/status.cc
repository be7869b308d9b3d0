#include "health/status.h"

#include <nlohmann/json.hpp>

namespace natsfleet::health {

std::string render_status(const FleetHealth& health, const std::string& service) {
  // ordered_json keeps the documented field order, which is what a person reading curl expects.
  using Json = nlohmann::ordered_json;
  Json subscriptions = Json::array();
  for (const auto& s : health.subscriptions) {
    Json entry = {
        {"name", s.name},
        {"kind", s.kind},
        {"subject", s.subject},
        {"stream", s.stream},
        {"consumer", s.consumer},
        {"state", to_string(s.state)},
        {"last_error", s.last_error},
        {"counters",
         {
             {"received", s.counters.received},
             {"acked", s.counters.acked},
             {"naked", s.counters.naked},
             {"termed", s.counters.termed},
             {"redelivered", s.counters.redelivered},
             {"handler_errors", s.counters.handler_errors},
             {"recoveries", s.counters.recoveries},
             {"retried", s.counters.retried},
             {"dead_lettered", s.counters.dead_lettered},
             {"dropped", s.counters.dropped},
             {"kept_alive", s.counters.kept_alive},
         }},
        {"downstream",
         {{"down", s.downstream_down}, {"error", s.downstream_error}, {"held", s.held}}},
        {"consumer_pending", s.consumer_pending},
        {"consumer_ack_pending", s.consumer_ack_pending},
        {"ack_floor", s.ack_floor},
    };
    if (s.partitions > 0)
      entry["partitions"] = {{"count", s.partitions},
                             {"owned", s.partitions_owned},
                             {"leases_taken", s.leases_taken},
                             {"leases_lost", s.leases_lost},
                             {"rewinds", s.rewinds}};
    subscriptions.push_back(std::move(entry));
  }
  Json doc = {
      {"service", service},
      {"live", health.live},
      {"ready", health.ready},
      {"connected", health.connected},
      {"reconnects", health.reconnects},
      {"fatal_reason", health.fatal_reason},
      {"subscriptions", std::move(subscriptions)},
  };
  if (!health.broker_error.empty()) doc["broker_error"] = health.broker_error;
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace natsfleet::health
