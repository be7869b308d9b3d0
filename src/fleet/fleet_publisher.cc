#include "fleet/fleet_publisher.h"

#include "nats/connection.h"
#include "nats/jetstream_api.h"

namespace natsfleet::fleet {

Result<void> FleetPublisher::publish(nats::Connection* connection, const std::string& subject,
                                     const std::string& data, const std::string& msg_id,
                                     const Headers& extra) {
  if (!connection) return Result<void>(Errc::not_connected, "fleet not started");
  if (msg_id.empty() && extra.empty()) return connection->publish(subject, data);
  Headers headers = extra;
  if (!msg_id.empty()) headers["Nats-Msg-Id"] = {msg_id};
  return connection->publish(subject, data, headers);
}

Result<uint64_t> FleetPublisher::publish_to_stream(
    nats::Connection* connection, const std::string& subject, const std::string& data,
    const std::string& msg_id, std::chrono::milliseconds timeout, const Headers& extra) {
  if (!connection) return Result<uint64_t>(Errc::not_connected, "fleet not started");
  const auto deadline = Clock::now() + timeout;
  // Whether a stream holds the subject is the broker's answer, never read from "no responders"
  // to the publish: a stream electing a leader, or JetStream starting, has no responder either,
  // and a plain publish then would reach nobody.
  auto holds = stream_holders_.holds(subject, [&](const std::string& s) -> Result<bool> {
    auto streams = nats::JetStreamApi(*connection, timeout).streams_holding(s);
    if (!streams) return streams.error();
    return !streams->empty();
  });
  if (!holds)
    return Error{holds.error().code, "no answer to whether a stream holds " + subject + ": " +
                                         holds.error().describe()};
  if (!*holds) return Result<uint64_t>(Errc::no_stream_for_subject, "no stream holds " + subject);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0)
    return Result<uint64_t>(Errc::timeout, subject + ": timed out asking which stream holds it");
  Headers headers = extra;
  if (!msg_id.empty()) headers["Nats-Msg-Id"] = {msg_id};
  auto reply = connection->request(subject, data, headers, left);
  if (!reply) {
    // The stream may be gone for good: ask the broker again (rate-limited) on a later publish.
    if (reply.error().code == Errc::no_responders) stream_holders_.doubt(subject);
    return reply.error();  // names the subject
  }
  auto ack = nats::parse_publish_ack(reply->data, subject);
  if (!ack && ack.error().code.category() == jetstream_category())
    return Error{ack.error().code, subject + ": " + ack.error().describe()};
  if (!ack) return ack.error();
  return ack->seq;
}

Result<std::optional<Message>> FleetPublisher::last_stored(nats::Connection* connection,
                                                           const std::string& stream,
                                                           const std::string& subject,
                                                           std::chrono::milliseconds timeout) {
  if (!connection) return Result<std::optional<Message>>(Errc::not_connected, "fleet not started");
  auto stored = nats::JetStreamApi(*connection, timeout).last_message(stream, subject);
  if (!stored) {
    if (stored.error().is_jetstream(nats::kJsNoMessageFound)) return std::optional<Message>();
    return Error{stored.error().code, stream + " " + subject + ": " + stored.error().describe()};
  }
  Delivery delivery{.stream = stream, .stream_seq = stored->seq};
  return std::optional<Message>(Message(std::move(stored->subject), std::move(stored->data),
                                        std::move(stored->headers), delivery));
}

}  // namespace natsfleet::fleet
