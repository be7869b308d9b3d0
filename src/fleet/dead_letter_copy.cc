#include "fleet/dead_letter_copy.h"

#include "base/utc_time.h"
#include "fleet/transport.h"
#include "nats/jetstream_api.h"
#include "natsfleet/dead_letter.h"
#include "natsfleet/redact.h"

namespace natsfleet::fleet {

DeadLetterCopy dead_letter_copy(const Message& message, const std::string& dead_letter_subject,
                                const std::string& subscription, const std::string& reason,
                                std::chrono::system_clock::time_point now) {
  DeadLetterCopy copy;
  copy.subject = dead_letter_subject;
  copy.data = message.data();
  copy.headers = message.headers();
  if (auto id = copy.headers.find("Nats-Msg-Id"); id != copy.headers.end()) {
    copy.headers[dead_letter::kMsgId] = id->second;
    copy.headers.erase("Nats-Msg-Id");
  }
  // Nats-Expected-* were the original publisher's conditions on its own stream; the
  // dead-letter stream would check them against itself and refuse the copy.
  std::erase_if(copy.headers,
                [](const auto& h) { return h.first.rfind("Nats-Expected-", 0) == 0; });
  const auto& d = message.delivery();
  const std::string stream = d ? d->stream : std::string();
  const uint64_t seq = d ? d->stream_seq : 0;
  copy.headers[dead_letter::kStream] = {stream};
  copy.headers[dead_letter::kSequence] = {std::to_string(seq)};
  copy.headers[dead_letter::kSubscription] = {subscription};
  copy.headers[dead_letter::kSubject] = {message.subject()};
  copy.headers[dead_letter::kDeliveries] = {std::to_string(message.delivered())};
  // A header value is one line: a multi-line reason (a response body) is folded.
  std::string one_line = reason.empty() ? std::string("terminated") : redact(reason);
  for (char& c : one_line)
    if (c == '\r' || c == '\n') c = ' ';
  copy.headers[dead_letter::kReason] = {one_line};
  copy.headers[dead_letter::kTime] = {base::format_utc_millis(now)};
  copy.headers["Nats-Msg-Id"] = {dead_letter::message_id(subscription, stream, seq)};
  return copy;
}

Result<void> publish_dead_letter(Transport& transport, const DeadLetterCopy& copy,
                                 std::chrono::milliseconds timeout) {
  auto reply = transport.request(copy.subject, copy.data, copy.headers, timeout);
  if (!reply)
    return Error{reply.error().code,
                 "dead letter to " + copy.subject + ": " + reply.error().describe()};
  auto ack = nats::parse_publish_ack(*reply, copy.subject);
  if (!ack)
    return Error{ack.error().code,
                 "dead letter to " + copy.subject + " not stored: " + ack.error().describe()};
  return {};
}

}  // namespace natsfleet::fleet
