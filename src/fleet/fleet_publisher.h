// What Fleet::publish, publish_to_stream and last_stored do on the fleet's connection: a core
// publish, a publish the stream holding the subject acknowledges, and a stream's last message of
// a subject.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "fleet/subject_stream_cache.h"
#include "natsfleet/error.h"
#include "natsfleet/message.h"

namespace natsfleet::nats {
class Connection;
}

namespace natsfleet::fleet {

// Any thread. Each call takes the fleet's connection, null before start() (not_connected).
class FleetPublisher {
 public:
  // A core publish, with a Nats-Msg-Id header when msg_id is set.
  Result<void> publish(nats::Connection* connection, const std::string& subject,
                       const std::string& data, const std::string& msg_id, const Headers& extra);
  // The stream's sequence once the stream holding `subject` stored it; no_stream_for_subject
  // when the broker says none holds it (asked again at most every few seconds per subject).
  Result<uint64_t> publish_to_stream(nats::Connection* connection, const std::string& subject,
                                     const std::string& data, const std::string& msg_id,
                                     std::chrono::milliseconds timeout, const Headers& extra);
  // The last message of `subject` in `stream`, or none.
  Result<std::optional<Message>> last_stored(nats::Connection* connection,
                                             const std::string& stream, const std::string& subject,
                                             std::chrono::milliseconds timeout);

 private:
  SubjectStreamCache stream_holders_;  // which subjects a stream holds
};

}  // namespace natsfleet::fleet
