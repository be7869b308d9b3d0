// A dead letter as natsfleet dead-letters sees it: a message stored on a dead-letter subject,
// described by its Natsfleet-* headers (include/natsfleet/dead_letter.h). The original message's
// other headers stay in `headers` for a replay and are never shown: they may hold secrets.
//
//   auto entry = describe_entry(stored, "MAIL_DEAD_LETTERS");
//   api.publish(entry.origin_subject, entry.data, replay_headers(entry));
#pragma once

#include <cstdint>
#include <string>

#include "nats/jetstream_api.h"
#include "natsfleet/message.h"

namespace natsfleet::deadletters {

struct DeadLetterEntry {
  std::string stream;  // the dead-letter stream
  uint64_t seq = 0;    // in the dead-letter stream
  std::string subject;
  std::string stored_at;         // when the dead-letter stream stored it
  std::string dead_lettered_at;  // Natsfleet-Dead-Lettered-At
  std::string subscription;      // Natsfleet-Origin-Subscription
  std::string origin_subject;    // Natsfleet-Origin-Subject
  std::string origin_stream;     // Natsfleet-Origin-Stream
  std::string origin_seq;        // Natsfleet-Origin-Sequence, as written
  std::string deliveries;        // Natsfleet-Deliveries, as written
  std::string reason;            // Natsfleet-Reason
  std::string data;
  Headers headers;  // all of them, the original's included: for replay_headers only
};

DeadLetterEntry describe_entry(nats::StoredMessage message, const std::string& stream);

// The Nats-Msg-Id a replay of the dead letter at `stream`:`seq` carries: the same for every try,
// so that a replay retried within the target stream's duplicate window is stored once.
std::string replay_msg_id(const std::string& stream, uint64_t seq);

// The original message's headers as a replay sends them: without the Natsfleet-* ones, without
// any Nats-Msg-Id (replay_msg_id() instead: the original's id could be refused as a duplicate or
// would drop a genuinely new message later) and without Nats-Expected-* (the stream has moved on:
// they would make the broker refuse the replay).
Headers replay_headers(const DeadLetterEntry& entry);

}  // namespace natsfleet::deadletters
