// The sink record: one JSON object a line, the contract shared by the file, stdout and worker
// sinks. Keys and their order are fixed:
//   {"subscription":..,"subject":..,"stream":..,"stream_seq":..,"consumer_seq":..,"delivered":..,
//    "partition":..,"epoch":..,"time":"2026-11-29T21:49:45.123Z","headers":{"K":["v"]},"data":..,
//    "encoding":"utf8"|"base64"}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/json_text.h"
#include "base/utc_time.h"
#include "natsfleet/message.h"

namespace natsfleet::sinks {

// One line, no trailing newline. stream, stream_seq and consumer_seq are null for core NATS
// messages, whose time is the moment of this call; a JetStream message's time is its stream
// timestamp. partition and epoch are ordered work's fencing token (with stream_seq), null for
// every other message. A payload that is not valid UTF-8 is carried as base64 (encoding
// "base64"). Header keys and values that are not valid UTF-8 have the bad bytes replaced by
// U+FFFD.
std::string record_json(const Message& message, const std::string& subscription);

// The same record with "id" as its first key: what the worker sink writes to its worker.
std::string record_json_with_id(uint64_t id, const Message& message,
                                const std::string& subscription);

using base::is_valid_utf8;

// Standard alphabet, with padding.
std::string base64_encode(std::string_view bytes);

// "2026-11-29T21:49:45.123Z" for nanoseconds since the Unix epoch.
using base::format_utc_millis;

}  // namespace natsfleet::sinks
