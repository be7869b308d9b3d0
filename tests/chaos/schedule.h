// The nemesis's plan: which fault, on what, when and for how long, drawn from a seed so that the
// same seed replays the same schedule. Two lanes run side by side, so faults combine: one for
// the broker (at most one node out at a time, so the R3 stream keeps its quorum) and one for the
// replicas and their sinks. Every length is a multiple of ack_wait, never of this machine's speed.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace natsfleet::chaos {

enum class FaultKind {
  replica_kill,       // SIGKILL a `natsfleet run`, start it again after the duration
  replica_pause,      // SIGSTOP for longer than ack_wait, then SIGCONT
  replica_partition,  // every link of one replica blackholed
  sink_outage,        // a replica's sink directory gone: its file sink fails and must hold
  node_kill,          // SIGKILL a broker node (any), restart it after the duration
  leader_kill,        // SIGKILL the node leading the stream, restart it after the duration
  node_pause,         // SIGSTOP a broker node, then SIGCONT
  node_partition,     // a node cut off from its peers and from every client
  link_delay,         // every link to one node delayed (ack_wait / 20)
  link_drop,          // every link to one node reset, and new ones refused, for the duration
  consumer_delete,    // the shared durable consumer deleted by hand (instant)
};
inline constexpr int kFaultKinds = 11;

const char* fault_kind_name(FaultKind kind);
// The kind named `name` ("replica-kill", ...), if any.
std::optional<FaultKind> fault_kind_named(const std::string& name);
bool is_broker_fault(FaultKind kind);

struct ScheduledFault {
  FaultKind kind = FaultKind::replica_kill;
  int target = 0;  // replica index, or node index; leader_kill resolves its node when it runs
  std::chrono::milliseconds start{0};     // from the start of the run
  std::chrono::milliseconds duration{0};  // 0 for consumer_delete
};

struct ScheduleOptions {
  std::chrono::milliseconds length{std::chrono::minutes(5)};  // no fault starts after this
  std::chrono::milliseconds ack_wait{std::chrono::seconds(4)};
  int replicas = 3;
  int nodes = 3;
  // The kinds drawn; empty: every kind. A lane left with none of its kinds stays quiet.
  std::set<FaultKind> only;
};

// Sorted by start. Deterministic for a given seed and options.
std::vector<ScheduledFault> make_schedule(uint64_t seed, const ScheduleOptions& options);

std::string describe(const ScheduledFault& fault);

}  // namespace natsfleet::chaos
