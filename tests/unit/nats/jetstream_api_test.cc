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

}  // namespace
}  // namespace natsfleet::nats
