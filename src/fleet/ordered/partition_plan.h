// How per-key ordered work (WorkSpec::per_key) lays its messages out on the broker.
//
// Publishers use plain subjects, say `orders.*` with the key in token 2. The broker maps each
// one to a partition with a deterministic subject mapping, which appends the partition number
// as a token (before a trailing `>`):
//
//   mappings { "orders.*": "orders.{{wildcard(1)}}.{{partition(16,1)}}" }
//   orders.42  is stored as  orders.42.7      (7 = fnv1a_32("42") % 16)
//
// Partition p is read, by its owner only, through a consumer filtering `orders.*.<p>`
// (fleet/ordered/ordered_work.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "natsfleet/error.h"
#include "natsfleet/spec.h"

namespace natsfleet::fleet {

class PartitionPlan {
 public:
  // `subject` as publishers use it; `key_token` 1-based, naming one of its `*` tokens.
  static Result<PartitionPlan> make(std::string_view subject, int key_token, int partitions);
  // A per-key work's plan; invalid_argument for a work without per-key order.
  static Result<PartitionPlan> of(const WorkSpec& spec);

  int partitions() const { return partitions_; }
  int key_token() const { return key_token_; }
  // 1-based: the token of a stored subject that holds the partition number.
  int partition_token() const { return partition_token_; }
  // The subject publishers use: the mapping's source.
  const std::string& source() const { return source_; }
  // The mapping's destination, in the broker's syntax.
  const std::string& destination() const { return destination_; }
  // The mapping as a line of nats-server configuration: "<source>": "<destination>".
  std::string mapping_line() const;
  // The mapping as a block of nats-server configuration for the default account.
  std::string mappings_block() const { return "mappings { " + mapping_line() + " }\n"; }
  // What a stream must hold: the mapped subjects, every partition.
  const std::string& stored_subjects() const { return stored_; }
  // The filter subject of partition p.
  std::string filter(int partition) const;
  // The partition the broker maps `key` to, computed as nats-server does.
  int partition_of(std::string_view key) const;
  // A published subject (no wildcards, matching source()) as the broker stores it.
  std::string mapped(std::string_view published) const;
  // The partition number in a stored subject, or -1 when it holds none.
  int partition_in(std::string_view stored) const;

 private:
  std::string with_token(std::string_view token) const;

  std::string source_;
  std::string destination_;
  std::string stored_;
  int key_token_ = 0;
  int partitions_ = 0;
  int partition_token_ = 0;  // 1-based, in a stored subject
};

// The prefix of every consumer that reads partition p of the work `name` (an owner's reader is
// "<prefix>-e<epoch>g<n>").
std::string partition_consumer(std::string_view name, int partition);
// The description natsfleet gives those consumers.
std::string partition_description(std::string_view name, int partition);

}  // namespace natsfleet::fleet
