#include "replica.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "natsfleet/natsfleet.h"
#include "natsfleet/relay.h"
#include "natsfleet/relay_gateway.h"

namespace sync_status {
namespace {

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const auto secs = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

}  // namespace

Status status_for(const std::string& payload, const std::string& replica, const std::string& now,
                  uint64_t event_seq) {
  Status out;
  auto event = nlohmann::json::parse(payload, nullptr, false);
  if (!event.is_object() || !event.contains("member") || !event["member"].is_string()) {
    out.error = "not a sync event (want {\"member\": ..., \"messages\" | \"error\": ...})";
    return out;
  }
  out.member = event["member"].get<std::string>();
  if (auto checked = natsfleet::check_relay_key(out.member); !checked) {
    out.error = checked.error().message;
    return out;
  }
  nlohmann::json status = {
      {"member", out.member}, {"at", now}, {"handled_by", replica}, {"event", event_seq}};
  if (event.contains("error")) {
    status["state"] = "failed";
    status["error"] = event["error"].is_string() ? event["error"].get<std::string>() : "failed";
  } else {
    status["state"] = "synced";
    status["messages"] = event.value("messages", 0);
  }
  out.json = status.dump();
  return out;
}

int run_replica(const ReplicaOptions& options, const std::atomic<bool>& stop) {
  natsfleet::FleetOptions fleet_options;
  fleet_options.name = options.name;
  fleet_options.servers = options.servers;
  natsfleet::Fleet fleet(fleet_options);
  natsfleet::Relay relay(fleet, {.name = "sync-status"});
  std::atomic<bool> fatal{false};
  fleet.on_fatal([&](const natsfleet::FatalReport& r) {
    spdlog::error("fatal: {}", r.reason);
    fatal = true;
  });

  // The work: one replica per event. The status is published once, with the event's stream
  // sequence as message id (a redelivered event does not notify twice) and as its order.
  natsfleet::WorkSpec work;
  work.name = "sync-listener";
  work.subject = "daemon.sync.complete";
  work.flow.concurrency = 4;
  // The handler takes milliseconds: an event a killed replica held returns to the survivor after
  // 5 s rather than the default 30 s ('kill a' in the launcher shows it).
  work.flow.ack_wait = std::chrono::seconds(5);
  auto added = fleet.add_work(work, [&](const natsfleet::Message& m) {
    Status status = status_for(m.data(), options.name, utc_now(), m.stream_seq());
    if (!status.error.empty()) {
      spdlog::warn("event {}: {}; terminated", m.stream_seq(), status.error);
      return natsfleet::Disposition::term();
    }
    // The event's stream sequence orders the member's statuses: a status published late (its
    // event was taken over after ack_wait) never replaces a newer one on a page.
    auto published = relay.publish(status.member, status.json,
                                   "sync-" + std::to_string(m.stream_seq()), m.stream_seq());
    if (!published) {
      spdlog::warn("status for {} not published ({}); retrying", status.member,
                   published.error().describe());
      return natsfleet::Disposition::nak(std::chrono::seconds(1));
    }
    spdlog::info("{} synced (event {}): status published", status.member, m.stream_seq());
    return natsfleet::Disposition::ack();
  });
  if (!added) {
    spdlog::error("{}", added.error().describe());
    return 2;
  }

  // The browsers: the gateway's sessions are the relay's; every attach re-ensures the relay's
  // subscription (the first one creates it).
  natsfleet::RelayGateway gateway(relay, {.host = options.host,
                                          .port = static_cast<uint16_t>(options.port),
                                          .web_root = options.web_root});
  if (auto started = fleet.start(); !started) {
    spdlog::error("{}", started.error().describe());
    return 2;
  }
  // Statuses from the start, even before the first browser attaches.
  (void)relay.ensure_subscribed();
  if (auto listening = gateway.start(); !listening) {
    spdlog::error("{}", listening.error().describe());
    return 2;
  }
  spdlog::info("{}: serving http://{}:{}/", options.name, options.host, gateway.port());
  std::printf("listening %s http://%s:%d/\n", options.name.c_str(), options.host.c_str(),
              gateway.port());
  std::fflush(stdout);

  while (!stop && !fatal) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  gateway.stop();
  fleet.shutdown(std::chrono::seconds(5));
  return fatal ? 70 : 0;
}

}  // namespace sync_status
