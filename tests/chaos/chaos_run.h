// One chaos run: a 3-node nats-server cluster with an R3 stream, N `natsfleet run` replicas with
// file sinks, each client reaching each node through its own TcpProxy, a publisher recording every
// publish and ack, and the nemesis working through a seeded schedule. At the end every fault is
// healed, the fleet drains, and the history is written to `out_dir` and checked.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "chaos/checker.h"
#include "chaos/history.h"
#include "chaos/schedule.h"
#include "nats/jetstream_api.h"

namespace natsfleet::chaos {

struct RunOptions {
  uint64_t seed = 1;
  std::chrono::seconds length{300};  // faults and publishing stop after this
  int replicas = 3;
  int publish_rate = 200;  // messages per second, paced (a publish waits for its ack)
  std::chrono::milliseconds ack_wait{std::chrono::seconds(4)};
  std::chrono::milliseconds heartbeat{std::chrono::seconds(1)};
  // Per-key ordered work when above 0: message i goes to chaos.jobs.k<i % keys>, the replicas'
  // work is ordering = "per-key" over `partitions`, and the checker checks each key's order.
  int keys = 0;
  int partitions = 16;
  bool debug_log = false;      // the replicas log each message's path (log_level = "debug")
  std::set<FaultKind> faults;  // the kinds injected; empty: every kind
  std::string out_dir;         // created; history, summary.json, timeline.png, replica logs
  std::string natsfleet;       // the natsfleet binary
  std::string nats_server;     // the nats-server binary name or path
};

// The stall bound and the blame window, from the run's settings and faults. A message held by a
// replica that stops waits ack_wait before the broker hands it on, and its redelivery may land
// on a replica that is itself cut off: twice ack_wait. A lost consumer or pull is noticed after
// two missed heartbeats and a lookup; a moved stream or consumer leader needs the broker's own
// election first (up to ~10 s, a nats-server constant). And a replica whose sink is down holds
// what it has until the sink is back (by design: an outage uses no deliveries) plus one probe
// interval, so the longest sink outage of the run counts too.
CheckOptions check_options_for(const History& history);

// What a stream holds at the sequence a publish's ack named.
enum class AtSequence { that_message, another_message, nothing, unknown };
// `unknown` (the stream could not be read) leaves `error` set.
AtSequence stream_holds(nats::JetStreamApi& api, const std::string& stream, uint64_t seq,
                        const std::string& data, std::string* error);

// Where a stream holds `data` among the messages of `subject`: for a publish acked with sequence
// 0 (nats-server answers a retry of a publish it is still storing as a duplicate with no sequence
// yet). `that_message` sets `*seq`; `nothing` when no message of the subject holds it.
AtSequence stream_holds_on_subject(nats::JetStreamApi& api, const std::string& stream,
                                   const std::string& subject, const std::string& data,
                                   uint64_t* seq, std::string* error);

// Returns the exit code: 0 when the checker passed, 1 when it failed, 2 when the run could not be
// set up. Prints progress and the report to stdout.
int run_chaos(const RunOptions& options);

}  // namespace natsfleet::chaos
