// One read of every stream and consumer on a broker, through JetStream API reads only (stream
// names and info, consumer names and info): the audit never creates, updates or deletes anything.
//
//   auto first = read_snapshot(connection, deadline);   // Result<BrokerSnapshot>
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nats/jetstream_api.h"
#include "natsfleet/error.h"

namespace natsfleet::nats {
class Connection;
}

namespace natsfleet::audit {

struct BrokerSnapshot {
  std::vector<nats::StreamInfo> streams;      // ordered by name
  std::vector<nats::ConsumerInfo> consumers;  // every stream's, ordered by stream, then name
  // How many messages each subject read_snapshot was asked to count holds, for subjects a stream
  // holds (a subject no stream holds is absent).
  std::map<std::string, uint64_t> subject_messages;

  // nullptr when the stream has no consumer of that name.
  const nats::ConsumerInfo* find(const std::string& stream, const std::string& consumer) const;
  // The consumers of one stream.
  std::vector<const nats::ConsumerInfo*> consumers_of(const std::string& stream) const;
};

// Reads everything, each API call bounded by what is left until `deadline`, and counts the
// messages on each of `count_subjects`. A stream or consumer deleted between listing and reading
// it is left out, not an error: the broker is live.
Result<BrokerSnapshot> read_snapshot(nats::Connection& connection,
                                     std::chrono::steady_clock::time_point deadline,
                                     const std::vector<std::string>& count_subjects = {});

}  // namespace natsfleet::audit
