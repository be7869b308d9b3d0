#include "chaos/schedule.h"

#include <algorithm>
#include <random>

namespace natsfleet::chaos {
namespace {

using std::chrono::milliseconds;

// A length drawn between lo and hi multiples of ack_wait. The distribution is computed by hand
// (not std::uniform_real_distribution, whose algorithm the standard leaves open) so that a seed
// gives the same schedule with any standard library.
milliseconds between(std::mt19937_64& random, milliseconds ack_wait, double lo, double hi) {
  const double unit = static_cast<double>(random() >> 11) / 9007199254740992.0;  // [0, 1)
  return milliseconds(
      static_cast<int64_t>((lo + (hi - lo) * unit) * static_cast<double>(ack_wait.count())));
}

int pick(std::mt19937_64& random, int n) { return static_cast<int>(random() % uint64_t(n)); }

struct Weighted {
  FaultKind kind;
  int weight;
};

FaultKind draw(std::mt19937_64& random, const std::vector<Weighted>& kinds) {
  int total = 0;
  for (const auto& k : kinds) total += k.weight;
  int roll = pick(random, total);
  for (const auto& k : kinds) {
    if (roll < k.weight) return k.kind;
    roll -= k.weight;
  }
  return kinds.back().kind;
}

// Lengths, as multiples of ack_wait: a pause must outlast ack_wait for the broker to hand the
// paused replica's messages on; a down node must outlast the broker's leader election.
milliseconds length_of(FaultKind kind, std::mt19937_64& random, milliseconds ack_wait) {
  switch (kind) {
    case FaultKind::replica_kill:
      return between(random, ack_wait, 0.25, 2.0);
    case FaultKind::replica_pause:
      return between(random, ack_wait, 1.25, 3.0);
    case FaultKind::replica_partition:
      return between(random, ack_wait, 0.5, 3.0);
    case FaultKind::sink_outage:
      return between(random, ack_wait, 1.0, 4.0);
    case FaultKind::node_kill:
    case FaultKind::leader_kill:
      return between(random, ack_wait, 1.0, 4.0);
    case FaultKind::node_pause:
      return between(random, ack_wait, 0.5, 2.5);
    case FaultKind::node_partition:
      return between(random, ack_wait, 1.0, 3.0);
    case FaultKind::link_delay:
      return between(random, ack_wait, 1.0, 3.0);
    case FaultKind::link_drop:
      return between(random, ack_wait, 0.25, 1.5);
    case FaultKind::consumer_delete:
      return milliseconds(0);
  }
  return milliseconds(0);
}

void fill_lane(std::vector<ScheduledFault>& out, std::mt19937_64& random,
               const ScheduleOptions& options, std::vector<Weighted> kinds, int targets,
               milliseconds first) {
  if (!options.only.empty())
    std::erase_if(kinds, [&](const Weighted& k) { return !options.only.contains(k.kind); });
  if (kinds.empty()) return;
  milliseconds at = first;
  while (at < options.length) {
    ScheduledFault fault;
    fault.kind = draw(random, kinds);
    fault.target = pick(random, targets);
    fault.start = at;
    fault.duration = length_of(fault.kind, random, options.ack_wait);
    out.push_back(fault);
    // A quiet gap after each fault, so recovery is seen as well as failure.
    at += fault.duration + between(random, options.ack_wait, 0.5, 2.0);
  }
}

}  // namespace

const char* fault_kind_name(FaultKind kind) {
  switch (kind) {
    case FaultKind::replica_kill:
      return "replica-kill";
    case FaultKind::replica_pause:
      return "replica-pause";
    case FaultKind::replica_partition:
      return "replica-partition";
    case FaultKind::sink_outage:
      return "sink-outage";
    case FaultKind::node_kill:
      return "node-kill";
    case FaultKind::leader_kill:
      return "leader-kill";
    case FaultKind::node_pause:
      return "node-pause";
    case FaultKind::node_partition:
      return "node-partition";
    case FaultKind::link_delay:
      return "link-delay";
    case FaultKind::link_drop:
      return "link-drop";
    case FaultKind::consumer_delete:
      return "consumer-delete";
  }
  return "?";
}

std::optional<FaultKind> fault_kind_named(const std::string& name) {
  for (int i = 0; i < kFaultKinds; ++i) {
    const auto kind = static_cast<FaultKind>(i);
    if (name == fault_kind_name(kind)) return kind;
  }
  return std::nullopt;
}

bool is_broker_fault(FaultKind kind) {
  switch (kind) {
    case FaultKind::node_kill:
    case FaultKind::leader_kill:
    case FaultKind::node_pause:
    case FaultKind::node_partition:
    case FaultKind::link_delay:
    case FaultKind::link_drop:
    case FaultKind::consumer_delete:
      return true;
    default:
      return false;
  }
}

std::vector<ScheduledFault> make_schedule(uint64_t seed, const ScheduleOptions& options) {
  std::mt19937_64 broker_random(seed);
  std::mt19937_64 replica_random(seed ^ 0x9e3779b97f4a7c15ULL);
  std::vector<ScheduledFault> out;
  // The first seconds run clean: the history starts from a settled fleet.
  const milliseconds settle = options.ack_wait;
  fill_lane(out, broker_random, options,
            {{FaultKind::node_kill, 3},
             {FaultKind::leader_kill, 3},
             {FaultKind::node_pause, 2},
             {FaultKind::node_partition, 2},
             {FaultKind::link_delay, 1},
             {FaultKind::link_drop, 1},
             {FaultKind::consumer_delete, 1}},
            options.nodes, settle);
  fill_lane(out, replica_random, options,
            {{FaultKind::replica_kill, 3},
             {FaultKind::replica_pause, 3},
             {FaultKind::replica_partition, 2},
             {FaultKind::sink_outage, 2}},
            options.replicas, settle + options.ack_wait / 2);
  std::stable_sort(out.begin(), out.end(), [](const ScheduledFault& a, const ScheduledFault& b) {
    return a.start < b.start;
  });
  return out;
}

std::string describe(const ScheduledFault& fault) {
  std::string target;
  if (fault.kind == FaultKind::leader_kill) {
    target = "stream leader";
  } else if (fault.kind == FaultKind::consumer_delete) {
    target = "consumer";
  } else if (is_broker_fault(fault.kind)) {
    target = "n" + std::to_string(fault.target + 1);
  } else {
    target = "r" + std::to_string(fault.target + 1);
  }
  return std::string(fault_kind_name(fault.kind)) + " " + target + " at " +
         std::to_string(fault.start.count()) + " ms for " + std::to_string(fault.duration.count()) +
         " ms";
}

}  // namespace natsfleet::chaos
