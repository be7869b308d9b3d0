// The pure half of reading stored messages back: STREAM.MSG.GET answers carry base64 data and a
// base64 "NATS/1.0" header block.
#include "nats/jetstream_api.h"

#include <gtest/gtest.h>

#include <string>

namespace natsfleet::nats {
namespace {

std::string decoded(std::string_view text) {
  auto bytes = decode_base64(text);
  EXPECT_TRUE(bytes) << text;
  return bytes ? *bytes : "<not base64>";
}

TEST(Base64, DecodesWithAndWithoutPadding) {
  EXPECT_EQ(decoded(""), "");
  EXPECT_EQ(decoded("Zg=="), "f");
  EXPECT_EQ(decoded("Zg"), "f");
  EXPECT_EQ(decoded("Zm8="), "fo");
  EXPECT_EQ(decoded("Zm9v"), "foo");
  EXPECT_EQ(decoded("aGVsbG8gd29ybGQ="), "hello world");
  EXPECT_EQ(decoded("AP8A/w=="), std::string("\0\xff\0\xff", 4));
  EXPECT_EQ(decoded("+/+/"), "\xfb\xff\xbf");
}

TEST(Base64, RefusesWhatIsNotBase64) {
  EXPECT_FALSE(decode_base64("Zm9v!"));
  EXPECT_FALSE(decode_base64("Z"));
  EXPECT_FALSE(decode_base64("Zm 9v"));
  EXPECT_FALSE(decode_base64("Zm9v\n"));
}

TEST(HeaderBlock, ParsesKeysValuesAndRepeats) {
  auto headers = parse_header_block(
      "NATS/1.0\r\nNatsfleet-Origin-Stream: MAIL\r\nX-Tag: a\r\nX-Tag: b\r\n"
      "Natsfleet-Reason: http 422: bad: address\r\nEmpty:\r\n\r\n");
  ASSERT_TRUE(headers) << headers.error().describe();
  EXPECT_EQ(headers->at("Natsfleet-Origin-Stream"), std::vector<std::string>{"MAIL"});
  EXPECT_EQ(headers->at("X-Tag"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(headers->at("Natsfleet-Reason"), std::vector<std::string>{"http 422: bad: address"});
  EXPECT_EQ(headers->at("Empty"), std::vector<std::string>{""});
  EXPECT_EQ(headers->size(), 4u);
}

TEST(HeaderBlock, AStatusLineAndNoHeadersAtAll) {
  auto status = parse_header_block("NATS/1.0 503\r\n\r\n");
  ASSERT_TRUE(status);
  EXPECT_TRUE(status->empty());
  auto bare = parse_header_block("NATS/1.0\r\n\r\n");
  ASSERT_TRUE(bare);
  EXPECT_TRUE(bare->empty());
}

TEST(HeaderBlock, RefusesWhatIsNoHeaderBlock) {
  EXPECT_FALSE(parse_header_block("HTTP/1.1 200 OK\r\n\r\n"));
  EXPECT_FALSE(parse_header_block("NATS/1.0\r\nno colon here\r\n\r\n"));
  EXPECT_FALSE(parse_header_block("NATS/1.0\r\n: no key\r\n\r\n"));
}

TEST(StoredMessage, DecodesTheApiAnswer) {
  const nlohmann::json message = {{"subject", "mail.dead"},
                                  {"seq", 7},
                                  {"time", "2026-11-29T21:49:45.123456789Z"},
                                  {"data", "aGVsbG8="},
                                  // "NATS/1.0\r\nNatsfleet-Deliveries: 5\r\n\r\n"
                                  {"hdrs", "TkFUUy8xLjANCk5hdHNmbGVldC1EZWxpdmVyaWVzOiA1DQoNCg=="}};
  auto m = parse_stored_message(message);
  ASSERT_TRUE(m) << m.error().describe();
  EXPECT_EQ(m->subject, "mail.dead");
  EXPECT_EQ(m->seq, 7u);
  EXPECT_EQ(m->time, "2026-11-29T21:49:45.123456789Z");
  EXPECT_EQ(m->data, "hello");
  EXPECT_EQ(m->headers.at("Natsfleet-Deliveries"), std::vector<std::string>{"5"});

  nlohmann::json no_headers = message;
  no_headers.erase("hdrs");
  EXPECT_TRUE(parse_stored_message(no_headers)->headers.empty());
  nlohmann::json bad = message;
  bad["data"] = "%%%";
  EXPECT_FALSE(parse_stored_message(bad));
}

// A consumer config as nats-server 2.9 answers CONSUMER.INFO for a durable someone else made.
const char* kBrokerConsumerConfig = R"({
  "durable_name": "sync-listener", "description": "mail", "deliver_policy": "by_start_sequence",
  "opt_start_seq": 201, "ack_policy": "explicit", "ack_wait": 30000000000, "max_deliver": 5,
  "backoff": [1000000000, 5000000000], "filter_subject": "daemon.sync.complete",
  "replay_policy": "instant", "sample_freq": "50%", "max_ack_pending": 1000,
  "deliver_subject": "deliver.sync", "idle_heartbeat": 5000000000, "flow_control": true,
  "num_replicas": 0, "metadata": {"owner": "team-a"}
})";

TEST(ConsumerConfigJson, ReadsEveryModelledField) {
  const auto c = parse_consumer_config(nlohmann::json::parse(kBrokerConsumerConfig));
  EXPECT_EQ(c.durable_name, "sync-listener");
  EXPECT_EQ(c.consumer_name(), "sync-listener");
  EXPECT_EQ(c.description, "mail");
  EXPECT_EQ(c.deliver_policy, DeliverPolicy::by_start_sequence);
  EXPECT_EQ(c.opt_start_seq, 201u);
  EXPECT_EQ(c.ack_policy, AckPolicy::explicit_ack);
  EXPECT_EQ(c.ack_wait, std::chrono::seconds(30));
  EXPECT_EQ(c.max_deliver, 5);
  EXPECT_EQ(c.filter_subject, "daemon.sync.complete");
  EXPECT_EQ(c.max_ack_pending, 1000);
  EXPECT_EQ(c.deliver_subject, "deliver.sync");
  EXPECT_FALSE(c.is_pull());
  EXPECT_EQ(c.idle_heartbeat, std::chrono::seconds(5));
  EXPECT_TRUE(c.flow_control);
  EXPECT_EQ(c.metadata, (std::map<std::string, std::string>{{"owner", "team-a"}}));
  EXPECT_EQ(c.other_fields.size(), 3u);  // backoff, sample_freq, num_replicas
}

TEST(ConsumerConfigJson, SeveralFilterSubjectsReadAndWriteAsTheirOwnField) {
  const auto sent = nlohmann::json::parse(R"({"durable_name": "orders",
      "deliver_policy": "all", "ack_policy": "explicit", "replay_policy": "instant",
      "filter_subjects": ["orders.created", "orders.paid"]})");
  const auto c = parse_consumer_config(sent);
  EXPECT_EQ(c.filter_subjects, (std::vector<std::string>{"orders.created", "orders.paid"}));
  EXPECT_TRUE(c.filter_subject.empty());
  EXPECT_TRUE(c.other_fields.empty());
  EXPECT_EQ(to_json(c), sent);
}

TEST(ConsumerConfigJson, WritesBackWhatTheBrokerSentFieldForField) {
  // An update in place sends the whole config: a field natsfleet does not model must not change.
  const auto sent = nlohmann::json::parse(kBrokerConsumerConfig);
  EXPECT_EQ(to_json(parse_consumer_config(sent)), sent);
}

TEST(ConsumerConfigJson, ZeroFieldsAreLeftToTheBrokersDefaults) {
  ConsumerConfig c;
  c.name = "status-1";
  c.deliver_policy = DeliverPolicy::new_messages;
  const auto j = to_json(c);
  EXPECT_EQ(j, nlohmann::json::parse(R"({"name": "status-1", "deliver_policy": "new",
      "ack_policy": "explicit", "replay_policy": "instant"})"));
  EXPECT_EQ(parse_consumer_config(j), c);
}

TEST(ConsumerConfigJson, EveryPolicyReadsBackAsItself) {
  for (auto p : {DeliverPolicy::all, DeliverPolicy::last, DeliverPolicy::new_messages,
                 DeliverPolicy::by_start_sequence, DeliverPolicy::by_start_time,
                 DeliverPolicy::last_per_subject}) {
    ConsumerConfig c;
    c.deliver_policy = p;
    EXPECT_EQ(parse_consumer_config(to_json(c)).deliver_policy, p) << to_string(p);
  }
  for (auto p : {AckPolicy::none, AckPolicy::all, AckPolicy::explicit_ack}) {
    ConsumerConfig c;
    c.ack_policy = p;
    EXPECT_EQ(parse_consumer_config(to_json(c)).ack_policy, p) << to_string(p);
  }
  ConsumerConfig paced;
  paced.replay_policy = ReplayPolicy::original;
  EXPECT_EQ(parse_consumer_config(to_json(paced)).replay_policy, ReplayPolicy::original);
}

TEST(ConsumerInfoJson, ReadsPositionsLeaderAndCreation) {
  const auto info = parse_consumer_info(nlohmann::json::parse(R"({
    "stream_name": "JOBS", "name": "jobs", "created": "2026-12-01T07:00:00Z",
    "config": {"durable_name": "jobs", "ack_policy": "explicit"},
    "delivered": {"consumer_seq": 12, "stream_seq": 10},
    "ack_floor": {"consumer_seq": 8, "stream_seq": 7},
    "num_ack_pending": 3, "num_redelivered": 2, "num_waiting": 1, "num_pending": 90,
    "cluster": {"leader": "n2"}})"));
  EXPECT_EQ(info.stream, "JOBS");
  EXPECT_EQ(info.delivered_consumer_seq, 12u);
  EXPECT_EQ(info.delivered_stream_seq, 10u);
  EXPECT_EQ(info.ack_floor_stream_seq, 7u);
  EXPECT_EQ(info.num_pending, 90u);
  EXPECT_EQ(info.leader, "n2");
  EXPECT_EQ(info.created, "2026-12-01T07:00:00Z");
  EXPECT_TRUE(info.is_pull());
  EXPECT_FALSE(info.since_last_delivery()) << "nats-server 2.9 sends no ts";
}

TEST(ConsumerInfoJson, ReadsWhenTheLeaderLastDeliveredAndAnswered) {
  const auto info = parse_consumer_info(nlohmann::json::parse(R"({
    "stream_name": "JOBS", "name": "jobs", "config": {"durable_name": "jobs"},
    "delivered": {"consumer_seq": 12, "stream_seq": 10,
                  "last_active": "2026-12-04T09:10:01.250000001Z"},
    "ts": "2026-12-04T09:10:03.5Z"})"));
  ASSERT_TRUE(info.since_last_delivery());
  EXPECT_EQ(*info.since_last_delivery(), std::chrono::nanoseconds(2'249'999'999));
}

TEST(StreamConfigJson, WritesWhatIsSetAndLeavesTheRestToTheBroker) {
  StreamConfig s{.name = "JOBS", .subjects = {"jobs.>"}};
  EXPECT_EQ(to_json(s), nlohmann::json::parse(R"({"name": "JOBS", "subjects": ["jobs.>"],
      "storage": "file", "retention": "limits"})"));
  s.max_age = std::chrono::hours(1);
  s.num_replicas = 3;
  s.storage = StorageType::memory;
  EXPECT_EQ(to_json(s)["max_age"], 3'600'000'000'000LL);
  EXPECT_EQ(to_json(s)["num_replicas"], 3);
  EXPECT_EQ(to_json(s)["storage"], "memory");
}

}  // namespace
}  // namespace natsfleet::nats
