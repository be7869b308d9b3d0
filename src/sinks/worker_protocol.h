// The worker sink's wire protocol, kept apart from the process handling so it can be tested
// alone. The sink writes sink records with an "id" first; the worker answers one JSON a line:
//   {"id":7,"result":"nak","delay":"5s","publish":[{"subject":"a.b","data":"..."}]}
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sinks/sink.h"

namespace natsfleet::sinks {

// Failures of the worker sink itself (worker gone, bad answer) nak with this delay.
inline constexpr std::chrono::milliseconds kWorkerRetryDelay{1000};

struct WorkerAnswer {
  uint64_t id = 0;
  // ack | nak(delay) | term | retry(delay); an unknown or missing result, an unreadable delay or a
  // malformed publish entry is a nak (kWorkerRetryDelay) with `error` saying why. Publish msg_ids
  // are left empty: they depend on the message (see publish_msg_id()).
  SinkResult result;
};

// Errc::protocol, saying why, when the line is not a JSON object with a non-negative integer
// "id": the sink logs it and goes on reading.
Result<WorkerAnswer> parse_worker_answer(std::string_view line);

// A "delay" is a duration string (base::parse_duration) or a JSON number of seconds. A year is
// far beyond any sensible redelivery delay: a longer one is an unreadable answer.
inline constexpr std::chrono::milliseconds kMaxWorkerDelay = std::chrono::hours(24 * 365);

// The Nats-Msg-Id of the index-th message a worker publishes for `message` delivered to
// `subscription` (the work's or broadcast's name), stable across redeliveries so the stream drops
// a repeat:
//   JetStream message:  "<subscription>/<stream>:<stream_seq>:<index>"
//   core NATS message:  "<subscription>/<subject>:<FNV-1a 64 of the payload, 16 hex>:<index>"
// The subscription keeps apart what two works (or two services) derive from the same source
// message into one stream: without it the second publish would be dropped as a duplicate while
// its source is acked. '/' cannot occur in a subscription name, so the prefix is unambiguous.
// Core NATS messages have no sequence: the replicas of a fleet that all receive the same
// broadcast publish its consequences once (and two equal payloads on one subject within the
// stream's duplicate window publish once: the price of having no sequence).
std::string publish_msg_id(const Message& message, const std::string& subscription, size_t index);

}  // namespace natsfleet::sinks
