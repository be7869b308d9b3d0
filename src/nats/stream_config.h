// A JetStream stream's configuration (what natsfleet creates) and state (what it reads back), as
// typed values; only src/nats translates them to and from the broker's JSON.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace natsfleet::nats {

enum class StorageType { file, memory };
enum class RetentionPolicy { limits, interest, work_queue };

// A zero duration or count is absent on the wire: the broker's default.
struct StreamConfig {
  std::string name;
  std::vector<std::string> subjects;
  StorageType storage = StorageType::file;
  RetentionPolicy retention = RetentionPolicy::limits;
  std::chrono::nanoseconds max_age{0};           // 0: kept for ever
  std::chrono::nanoseconds duplicate_window{0};  // 0: the broker's two minutes
  int num_replicas = 0;                          // 0: one
  int64_t max_msgs_per_subject = 0;              // 0: no limit
  int64_t max_bytes = 0;                         // 0 or -1: no limit
  int64_t max_msgs = 0;                          // 0 or -1: no limit

  bool operator==(const StreamConfig&) const = default;
};

struct StreamInfo {
  std::string name;
  std::vector<std::string> subjects;
  uint64_t messages = 0;
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
  std::string leader;   // cluster leader's server name; empty on a single server
  std::string created;  // when the stream was made, as the broker wrote it: a remade stream differs
  int num_replicas = 1;
  RetentionPolicy retention = RetentionPolicy::limits;
  StreamConfig config;  // as the broker reports it (its defaults filled in)
};

}  // namespace natsfleet::nats
