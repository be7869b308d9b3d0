#include "sinks/record.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace natsfleet::sinks {
namespace {

Message jetstream_message(std::string data, Headers headers = {}) {
  Delivery d;
  d.stream = "MAIL";
  d.consumer = "mail-relay";
  d.stream_seq = 42;
  d.consumer_seq = 40;
  d.delivered = 1;
  // 2026-11-29T21:49:45.123Z
  d.timestamp_ns = 1'795'988'985'123'456'789;
  return Message("mail.outgoing", std::move(data), std::move(headers), d);
}

TEST(RecordJson, JetStreamRecordHasTheContractKeysInOrder) {
  auto line = record_json(jetstream_message("hello", {{"K", {"v"}}}), "mail-relay");
  EXPECT_EQ(line,
            R"({"subscription":"mail-relay","subject":"mail.outgoing","stream":"MAIL",)"
            R"("stream_seq":42,"consumer_seq":40,"delivered":1,"partition":null,"epoch":null,)"
            R"("time":"2026-11-29T21:49:45.123Z","headers":{"K":["v"]},"data":"hello",)"
            R"("encoding":"utf8"})");
}

TEST(RecordJson, OrderedWorkRecordCarriesTheFencingToken) {
  const Message plain = jetstream_message("hello", {{"K", {"v"}}});
  const Message ordered(plain.subject(), plain.data(), plain.headers(), plain.delivery(), {},
                        nullptr, FencingToken{7, 3});
  EXPECT_EQ(record_json(ordered, "mail-relay"),
            R"({"subscription":"mail-relay","subject":"mail.outgoing","stream":"MAIL",)"
            R"("stream_seq":42,"consumer_seq":40,"delivered":1,"partition":7,"epoch":3,)"
            R"("time":"2026-11-29T21:49:45.123Z","headers":{"K":["v"]},"data":"hello",)"
            R"("encoding":"utf8"})");
  // A worker reads the same token after its id.
  auto j = nlohmann::json::parse(record_json_with_id(9, ordered, "mail-relay"));
  EXPECT_EQ(j["id"], 9);
  EXPECT_EQ(j["partition"], 7);
  EXPECT_EQ(j["epoch"], 3);
  EXPECT_EQ(j["stream_seq"], 42);
}

TEST(RecordJson, CoreMessageHasNullSequencesAndTheReceiveTime) {
  const auto before = std::chrono::system_clock::now();
  auto line = record_json(Message("member.7.status", "up", {}), "status");
  const auto after = std::chrono::system_clock::now();
  auto j = nlohmann::json::parse(line);
  EXPECT_TRUE(j["stream"].is_null());
  EXPECT_TRUE(j["stream_seq"].is_null());
  EXPECT_TRUE(j["consumer_seq"].is_null());
  EXPECT_EQ(j["delivered"], 1);
  EXPECT_TRUE(j["partition"].is_null());
  EXPECT_TRUE(j["epoch"].is_null());
  EXPECT_EQ(j["headers"], nlohmann::json::object());
  auto ns = [](auto t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  const std::string time = j["time"];
  EXPECT_GE(time, format_utc_millis(ns(before)));
  EXPECT_LE(time, format_utc_millis(ns(after)));
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(RecordJson, InvalidUtf8PayloadIsBase64) {
  auto j =
      nlohmann::json::parse(record_json(jetstream_message(std::string("\xff\x00\x01", 3)), "s"));
  EXPECT_EQ(j["encoding"], "base64");
  EXPECT_EQ(j["data"], "/wAB");
}

TEST(RecordJson, ControlCharactersAndUnicodeStayUtf8) {
  const std::string data = "line1\nline2\t\"q\" \xc3\xa9 \xf0\x9f\x98\x80";
  auto line = record_json(jetstream_message(data), "s");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["encoding"], "utf8");
  EXPECT_EQ(j["data"], data);
}

TEST(RecordJson, BadBytesInHeadersDoNotBreakTheLine) {
  auto line = record_json(jetstream_message("x", {{"K", {"a\xff"}}}), "s");
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["headers"]["K"][0], "a\xef\xbf\xbd");
}

TEST(RecordJson, WithIdPutsTheIdFirst) {
  auto line = record_json_with_id(7, jetstream_message("x"), "s");
  EXPECT_EQ(line.rfind(R"({"id":7,"subscription":"s",)", 0), 0u) << line;
}

TEST(Utf8, AcceptsWellFormedText) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8(std::string("nul\0inside", 10)));
  EXPECT_TRUE(is_valid_utf8("\xc2\x80"));          // U+0080
  EXPECT_TRUE(is_valid_utf8("\xe0\xa0\x80"));      // U+0800
  EXPECT_TRUE(is_valid_utf8("\xed\x9f\xbf"));      // U+D7FF, last before surrogates
  EXPECT_TRUE(is_valid_utf8("\xee\x80\x80"));      // U+E000
  EXPECT_TRUE(is_valid_utf8("\xf0\x90\x80\x80"));  // U+10000
  EXPECT_TRUE(is_valid_utf8("\xf4\x8f\xbf\xbf"));  // U+10FFFF
}

TEST(Utf8, RejectsOverlongsSurrogatesAndTruncation) {
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xc1\xbf"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xe0\x80\xaf"));      // overlong 3-byte
  EXPECT_FALSE(is_valid_utf8("\xf0\x80\x80\xaf"));  // overlong 4-byte
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // U+D800 surrogate
  EXPECT_FALSE(is_valid_utf8("\xed\xbf\xbf"));      // U+DFFF surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // U+110000
  EXPECT_FALSE(is_valid_utf8("\xf5\x80\x80\x80"));
  EXPECT_FALSE(is_valid_utf8("\x80"));          // lone continuation
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));      // truncated
  EXPECT_FALSE(is_valid_utf8("\xe2\x28\xa1"));  // bad continuation
  EXPECT_FALSE(is_valid_utf8("\xff"));
}

TEST(Base64, MatchesRfc4648Vectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode("\xfb\xff"), "+/8=");
}

TEST(FormatUtcMillis, TruncatesToMillisecondsAndHandlesTheEpoch) {
  EXPECT_EQ(format_utc_millis(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_utc_millis(999'999), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_utc_millis(1'000'000), "1970-01-01T00:00:00.001Z");
  EXPECT_EQ(format_utc_millis(-1), "1969-12-31T23:59:59.999Z");
}

}  // namespace
}  // namespace natsfleet::sinks
