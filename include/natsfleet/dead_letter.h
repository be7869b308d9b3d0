// The headers a dead-lettered message carries. The copy keeps the original's data and headers
// (its Nats-Msg-Id moves to Natsfleet-Origin-Msg-Id) and adds where it came from and why.
//
//   $ natsfleet dead-letters list --server nats://... --subject mail.dead
#pragma once

#include <cstdint>
#include <string>

namespace natsfleet::dead_letter {

inline constexpr const char* kStream = "Natsfleet-Origin-Stream";
inline constexpr const char* kSequence = "Natsfleet-Origin-Sequence";  // stream sequence
inline constexpr const char* kSubscription = "Natsfleet-Origin-Subscription";
inline constexpr const char* kSubject = "Natsfleet-Origin-Subject";
inline constexpr const char* kMsgId = "Natsfleet-Origin-Msg-Id";  // the original's, if any
inline constexpr const char* kDeliveries = "Natsfleet-Deliveries";
inline constexpr const char* kReason = "Natsfleet-Reason";
inline constexpr const char* kTime = "Natsfleet-Dead-Lettered-At";  // RFC 3339, UTC

// The Nats-Msg-Id of a dead letter: the same for every try, so a retried publish is stored once.
inline std::string message_id(const std::string& subscription, const std::string& stream,
                              uint64_t stream_seq) {
  return "dead-letter:" + subscription + ":" + stream + ":" + std::to_string(stream_seq);
}

}  // namespace natsfleet::dead_letter
