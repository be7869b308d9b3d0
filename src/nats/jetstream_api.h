// The JetStream management calls natsfleet needs, as raw JSON requests on the `$JS.API` subjects
// (nats.c 3.4.1's structs lag behind the server's fields; the JSON is the protocol).
//
//   JetStreamApi api(connection, std::chrono::seconds(2));
//   auto stream = api.find_stream("daemon.sync.complete");   // across all streams
//   auto info = api.consumer_info(*stream, "sync-listener");
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "nats/consumer_api.h"
#include "nats/consumer_config.h"
#include "nats/stream_config.h"
#include "natsfleet/error.h"
#include "natsfleet/message.h"

namespace natsfleet::nats {

class Connection;

// STREAM.MSG.GET's answer when the stream holds no such message.
inline constexpr int kJsNoMessageFound = 10037;

// A message read back from a stream, headers decoded.
struct StoredMessage {
  std::string subject;
  uint64_t seq = 0;
  std::string time;  // when the stream stored it, RFC 3339 as the server wrote it
  std::string data;
  Headers headers;
};

// A stream's answer to a stored publish.
struct PublishAck {
  std::string stream;
  uint64_t seq = 0;
  bool duplicate = false;  // the Nats-Msg-Id was seen within the duplicate window: not stored again
};

class JetStreamApi final : public ConsumerApi {
 public:
  JetStreamApi(Connection& connection, std::chrono::milliseconds timeout);
  // How long each later call waits for an answer. Only while no other thread calls this object.
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

  // The streams whose subjects hold `subject` (wildcards included), as the broker's JetStream
  // (the meta leader in a cluster) knows them: empty only when the broker answered that none
  // does. Not answering is an error, never "none": a timeout, no responders (JetStream starting,
  // no meta leader) or the API's own error.
  Result<std::vector<std::string>> streams_holding(const std::string& subject);
  // The first of streams_holding(subject); Errc::no_stream_for_subject when the broker answered
  // that no stream holds it.
  Result<std::string> find_stream(const std::string& subject);
  Result<std::vector<std::string>> stream_names();
  Result<StreamInfo> stream_info(const std::string& stream) override;
  Result<StreamInfo> create_stream(const StreamConfig& config);
  Result<void> delete_stream(const std::string& stream);
  Result<std::vector<std::string>> consumer_names(const std::string& stream);
  Result<ConsumerInfo> consumer_info(const std::string& stream,
                                     const std::string& consumer) override;
  Result<ConsumerInfo> update_consumer(const std::string& stream,
                                       const ConsumerConfig& config) override;
  Result<ConsumerInfo> create_consumer(const std::string& stream,
                                       const ConsumerConfig& config) override;
  Result<void> delete_consumer(const std::string& stream, const std::string& consumer) override;
  // Asks the consumer's leader to step down, so another server of its group leads it.
  Result<void> step_down_consumer_leader(const std::string& stream, const std::string& consumer);

  // The message at `seq`; with `subject`, the first message on that subject at or after `seq`
  // (next_by_subj, server 2.9 and later). None: an error with code kJsNoMessageFound.
  Result<StoredMessage> get_message(const std::string& stream, uint64_t seq,
                                    const std::string& subject = {});
  // The newest message on `subject` (last_by_subj). None: an error with code kJsNoMessageFound.
  Result<StoredMessage> last_message(const std::string& stream, const std::string& subject);
  Result<void> delete_message(const std::string& stream, uint64_t seq);
  // Removes the messages on `subject` only (it may hold wildcards); returns how many went.
  Result<uint64_t> purge_subject(const std::string& stream, const std::string& subject);
  // How many messages on `subject` (it may hold wildcards) the stream holds now.
  Result<uint64_t> subject_messages(const std::string& stream, const std::string& subject);
  // The subjects matching `filter` (it may hold wildcards) that the stream holds messages on.
  Result<std::vector<std::string>> subjects(const std::string& stream, const std::string& filter);
  // A stored publish: returns once the stream holding `subject` has the message. No stream
  // answered (none holds the subject, or the one that does has no leader at the moment):
  // Errc::no_responders.
  Result<PublishAck> publish(const std::string& subject, const std::string& data,
                             const Headers& headers);

  // One API call: the decoded answer, or the API's error as a jetstream_category() code.
  Result<nlohmann::json> call(const std::string& subject, const nlohmann::json& body);

 private:
  Connection& connection_;
  std::chrono::milliseconds timeout_;
};

// The broker's JSON and the typed values, both ways. A consumer config read and written back is
// the config the broker sent (fields natsfleet does not model ride in other_fields).
StreamInfo parse_stream_info(const nlohmann::json& j);
ConsumerInfo parse_consumer_info(const nlohmann::json& j);
ConsumerConfig parse_consumer_config(const nlohmann::json& j);
nlohmann::json to_json(const ConsumerConfig& config);
nlohmann::json to_json(const StreamConfig& config);
// STREAM.MSG.GET's "message" object: base64 data and a base64 "NATS/1.0" header block decoded.
Result<StoredMessage> parse_stored_message(const nlohmann::json& message);
// The stream's answer to a stored publish on `subject`: the ack, the broker's error (a
// jetstream_category() code with its description), or protocol when it cannot be read.
Result<PublishAck> parse_publish_ack(const std::string& reply, const std::string& subject);
// Standard base64 (padding optional, no line breaks); anything else is an error.
Result<std::string> decode_base64(std::string_view text);
// "NATS/1.0\r\nKey: value\r\n...\r\n\r\n" -> headers; a key given twice keeps both values in order.
// An inline status ("NATS/1.0 503") is ignored: stored messages carry none.
Result<Headers> parse_header_block(std::string_view block);

}  // namespace natsfleet::nats
