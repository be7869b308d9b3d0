// What a chaos run saw, as the checker reads it: every publish and whether the broker acked it,
// every record a sink wrote (observed as it appeared in the file), every fault with its span, and
// every replica's readiness over time. Times are milliseconds from the start of the run.
// Stored as JSON lines in the run's folder so a run can be checked again (`natsfleet-chaos check`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace natsfleet::chaos {

struct PublishRecord {
  int64_t id = 0;
  double sent_ms = 0;
  bool acked = false;
  uint64_t seq = 0;  // stream sequence from the ack
  double ack_ms = 0;
  int attempts = 0;
  std::string error;  // the last failure when not acked
};

struct HandlingRecord {
  int64_t id = 0;
  int replica = 0;
  int delivered = 0;  // the delivery count the sink record carries
  uint64_t seq = 0;
  double at_ms = 0;  // when the record was seen in the sink file
  // When its file was last read without it: it was written after this and by at_ms. -1 when not
  // known (histories recorded before it was kept, or made by hand).
  double absent_ms = -1;
  // Ordered work's fencing token as the record carries it; empty where the record has null.
  std::optional<int> partition;
  std::optional<uint64_t> epoch;
};

struct FaultRecord {
  std::string kind;    // fault_kind_name()
  std::string target;  // "r2", "n1", "consumer"
  double start_ms = 0;
  double end_ms = 0;
};

struct ReadySample {
  int replica = 0;
  double at_ms = 0;
  bool ready = false;
};

struct History {
  uint64_t seed = 0;
  int replicas = 0;
  double ack_wait_ms = 0;
  double heartbeat_ms = 0;
  double retry_max_ms = 0;  // the replicas' longest wait between probes of a sink that is down
  // Per-key ordered work: message id i has key i % keys (0: the work is not ordered).
  int keys = 0;
  double faults_end_ms = 0;  // the nemesis stopped and healed everything here
  double end_ms = 0;
  std::vector<PublishRecord> publishes;
  std::vector<HandlingRecord> handlings;
  std::vector<FaultRecord> faults;
  std::vector<ReadySample> readiness;
  std::vector<int64_t> dead_lettered;  // ids found in the dead-letter stream
  // Acked ids the stream no longer holds at the end: the sequence their ack named holds another
  // message, or none. The broker lost them; no consumer could have handled them.
  std::vector<int64_t> broker_lost;
  size_t unreadable_lines = 0;  // sink lines that were not a record (torn by a kill)
};

// Files: run.json, publishes.jsonl, handled.jsonl, faults.jsonl, readiness.jsonl,
// dead_letters.jsonl. Throws std::runtime_error when a file cannot be written or read.
void write_history(const std::string& dir, const History& history);
History read_history(const std::string& dir);

}  // namespace natsfleet::chaos
