#include "fleet/consumer_shape.h"

#include <chrono>
#include <cstdio>
#include <string_view>

#include "base/fnv_hash.h"

namespace natsfleet::fleet {
namespace {

int64_t ns(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

std::string describe_ns(int64_t value) {
  if (value % 1'000'000'000 == 0) return std::to_string(value / 1'000'000'000) + "s";
  return std::to_string(value / 1'000'000) + "ms";
}

}  // namespace

std::string successor_name(const std::string& name, const std::string& stream,
                           const std::string& subject, WorkShape shape) {
  const char* kind = shape == WorkShape::pull ? "pull" : "queue";
  char digits[9];
  std::snprintf(digits, sizeof digits, "%08x",
                base::fnv1a_32(stream + '\n' + subject + '\n' + kind));
  return name + "-" + kind + "-" + digits;
}

std::string deliver_subject_for(const std::string& durable) {
  return "_NATSFLEET.deliver." + durable;
}

nlohmann::json desired_consumer_config(const WorkSpec& spec, const std::string& durable) {
  const std::string& name = durable.empty() ? spec.name : durable;
  nlohmann::json c = {
      {"durable_name", name},
      {"ack_policy", "explicit"},
      {"ack_wait", ns(spec.ack_wait)},
      {"max_deliver", kBrokerMaxDeliver},
      {"max_ack_pending", spec.max_ack_pending},
      {"filter_subject", spec.subject},
      {"deliver_policy", spec.start == StartAt::all ? "all" : "new"},
      {"replay_policy", "instant"},
  };
  if (spec.shape == WorkShape::pull) {
    c["max_waiting"] = 512;
  } else {
    // Every replica joins the same deliver group: the broker hands each message to one of them.
    c["deliver_subject"] = deliver_subject_for(name);
    c["deliver_group"] = name;
  }
  if (!spec.description.empty()) c["description"] = spec.description;
  return c;
}

nlohmann::json config_starting_at(const WorkSpec& spec, uint64_t seq, const std::string& durable) {
  nlohmann::json c = desired_consumer_config(spec, durable);
  c["deliver_policy"] = "by_start_sequence";
  c["opt_start_seq"] = seq;
  return c;
}

nlohmann::json replica_consumer_config(const WorkSpec& spec, const std::string& name,
                                       uint64_t start_seq, std::chrono::milliseconds inactive,
                                       bool last_per_subject) {
  nlohmann::json c = {
      {"name", name},
      {"ack_policy", "explicit"},
      {"ack_wait", ns(spec.ack_wait)},
      {"max_deliver", kBrokerMaxDeliver},
      {"max_ack_pending", spec.max_ack_pending},
      {"filter_subject", spec.subject},
      {"deliver_policy", start_seq > 0      ? "by_start_sequence"
                         : last_per_subject ? "last_per_subject"
                                            : "new"},
      {"replay_policy", "instant"},
      {"max_waiting", 512},
      {"inactive_threshold", ns(inactive)},
  };
  if (start_seq > 0) c["opt_start_seq"] = start_seq;
  return c;
}

namespace {

// Why a consumer cannot carry this spec's work as it is, or "" when it can (mutable fields aside).
std::string shape_problem(const WorkSpec& spec, const nlohmann::json& existing) {
  const bool push = existing.contains("deliver_subject");
  const bool group = !existing.value("deliver_group", std::string()).empty();
  if (spec.shape == WorkShape::pull && push)
    return group ? "is a push consumer with a deliver group; this fleet pulls"
                 : "is a plain push durable, which admits a single subscriber";
  if (spec.shape == WorkShape::push_queue && !push)
    return "is a pull consumer; this fleet shares a push consumer with a deliver group";
  if (spec.shape == WorkShape::push_queue && !group)
    return "is a plain push durable, which admits a single subscriber";
  const std::string filter = existing.value("filter_subject", std::string());
  if (filter != spec.subject) return "filters subject '" + filter + "', not '" + spec.subject + "'";
  const std::string ack = existing.value("ack_policy", std::string("explicit"));
  if (ack != "explicit") return "has ack policy '" + ack + "', not explicit";
  // Where a consumer started does not matter once it runs, except for these two, which skip
  // all but the last message(s): a work consumer must not have skipped work.
  const std::string deliver = existing.value("deliver_policy", std::string("all"));
  if (deliver == "last" || deliver == "last_per_subject")
    return "has deliver policy '" + deliver + "', which skipped earlier messages";
  if (existing.value("replay_policy", std::string("instant")) != "instant")
    return "replays at the original pace, not as fast as handled";
  return {};
}

}  // namespace

ShapeCheck check_shape(const WorkSpec& spec, const nlohmann::json& existing) {
  ShapeCheck out;
  out.problem = shape_problem(spec, existing);
  if (!out.problem.empty()) {
    out.compatible = false;
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
  drift("max_deliver", kBrokerMaxDeliver, std::to_string(existing.value("max_deliver", 0)),
        "-1 (natsfleet enforces max_deliver itself)");
  drift("max_ack_pending", spec.max_ack_pending,
        std::to_string(existing.value("max_ack_pending", 0)), std::to_string(spec.max_ack_pending));
  if (!spec.description.empty())
    drift("description", spec.description, existing.value("description", std::string("none")),
          spec.description);
  return out;
}

}  // namespace natsfleet::fleet
