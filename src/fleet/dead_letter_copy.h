// The copy of a terminated work message that goes to the work's dead-letter subject: its data,
// its headers (a Nats-Msg-Id moves to Natsfleet-Origin-Msg-Id, so the copy is not taken for a
// duplicate of something else; Nats-Expected-* are dropped, they were conditions on the original
// stream) and where it came from (include/natsfleet/dead_letter.h).
//
//   auto copy = dead_letter_copy(message, "mail.dead", "mail-relay", "HTTP 400", now);
//   if (auto stored = publish_dead_letter(transport, copy, 5s); stored) { /* then +TERM */ }
#pragma once

#include <chrono>
#include <string>

#include "natsfleet/error.h"
#include "natsfleet/message.h"

namespace natsfleet::fleet {

class Transport;

struct DeadLetterCopy {
  std::string subject;
  std::string data;
  Headers headers;  // includes Nats-Msg-Id: the same for every try of the same message
};

DeadLetterCopy dead_letter_copy(const Message& message, const std::string& dead_letter_subject,
                                const std::string& subscription, const std::string& reason,
                                std::chrono::system_clock::time_point now);

// Publishes the copy and waits for the stream's ack. An error means it may not be stored: the
// original must not be terminated.
Result<void> publish_dead_letter(Transport& transport, const DeadLetterCopy& copy,
                                 std::chrono::milliseconds timeout);

}  // namespace natsfleet::fleet
