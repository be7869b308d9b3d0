#include "fleet/consumer_shape.h"

#include <chrono>
#include <cstdio>
#include <string_view>

namespace natsfleet::fleet {
namespace {

int64_t ns(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

std::string describe_ns(int64_t value) {
  if (value % 1'000'000'000 == 0) return std::to_string(value / 1'000'000'000) + "s";
  return std::to_string(value / 1'000'000) + "ms";
}

// FNV-1a, 32 bits: stable across builds and platforms (std::hash is not).
uint32_t fnv1a(std::string_view text) {
  uint32_t h = 2166136261u;
  for (unsigned char c : text) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

}  // namespace

std::string successor_name(const std::string& name, const std::string& stream,
                           const std::string& subject, WorkShape shape) {
  const char* kind = shape == WorkShape::pull ? "pull" : "queue";
  char digits[9];
  std::snprintf(digits, sizeof digits, "%08x", fnv1a(stream + '\n' + subject + '\n' + kind));
  return name + "-" + kind + "-" + digits;
}

nlohmann::json desired_consumer_config(const WorkSpec& spec) {
  nlohmann::json c = {
      {"durable_name", spec.name},
      {"ack_policy", "explicit"},
      {"ack_wait", ns(spec.ack_wait)},
      {"max_deliver", spec.max_deliver},
      {"max_ack_pending", spec.max_ack_pending},
      {"filter_subject", spec.subject},
      {"deliver_policy", spec.start == StartAt::all ? "all" : "new"},
      {"replay_policy", "instant"},
      {"max_waiting", 512},
  };
  if (!spec.description.empty()) c["description"] = spec.description;
  return c;
}

nlohmann::json config_starting_at(const WorkSpec& spec, uint64_t seq) {
  nlohmann::json c = desired_consumer_config(spec);
  c["deliver_policy"] = "by_start_sequence";
  c["opt_start_seq"] = seq;
  return c;
}

ShapeCheck check_shape(const WorkSpec& spec, const nlohmann::json& existing) {
  ShapeCheck out;
  if (existing.contains("deliver_subject")) {
    out.compatible = false;
    out.problem = existing.contains("deliver_group")
                      ? "is a push consumer with a deliver group; this fleet pulls"
                      : "is a plain push durable, which admits a single subscriber";
    return out;
  }
  if (existing.value("filter_subject", std::string()) != spec.subject) {
    out.compatible = false;
    out.problem = "filters subject '" + existing.value("filter_subject", std::string()) +
                  "', not '" + spec.subject + "'";
    return out;
  }
  if (existing.value("ack_policy", std::string("explicit")) != "explicit") {
    out.compatible = false;
    out.problem =
        "has ack policy '" + existing.value("ack_policy", std::string()) + "', not explicit";
    return out;
  }

  out.updated = existing;
  auto drift = [&](const char* key, const nlohmann::json& want, const std::string& from,
                   const std::string& to) {
    if (existing.contains(key) && existing[key] == want) return;
    out.needs_update = true;
    out.updated[key] = want;
    if (!out.changes.empty()) out.changes += ", ";
    out.changes += std::string(key) + " " + from + " -> " + to;
  };
  const int64_t ack_wait = existing.value("ack_wait", int64_t{0});
  drift("ack_wait", ns(spec.ack_wait), describe_ns(ack_wait), describe_ns(ns(spec.ack_wait)));
  drift("max_deliver", spec.max_deliver, std::to_string(existing.value("max_deliver", 0)),
        std::to_string(spec.max_deliver));
  drift("max_ack_pending", spec.max_ack_pending,
        std::to_string(existing.value("max_ack_pending", 0)), std::to_string(spec.max_ack_pending));
  if (!spec.description.empty())
    drift("description", spec.description, existing.value("description", std::string("none")),
          spec.description);
  return out;
}

}  // namespace natsfleet::fleet
