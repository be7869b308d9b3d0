#include "consume/ack_metadata.h"

#include <gtest/gtest.h>

namespace natsfleet::consume {
namespace {

TEST(AckMetadata, ParsesNineTokenReplySubject) {
  auto d = parse_ack_subject("$JS.ACK.MAIL.mail-relay.3.42.40.1764452985123000000.17");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->stream, "MAIL");
  EXPECT_EQ(d->consumer, "mail-relay");
  EXPECT_EQ(d->delivered, 3u);
  EXPECT_EQ(d->stream_seq, 42u);
  EXPECT_EQ(d->consumer_seq, 40u);
  EXPECT_EQ(d->timestamp_ns, 1764452985123000000);
  EXPECT_EQ(d->pending, 17u);
}

TEST(AckMetadata, ParsesDomainFormWithAccountHashAndRandomToken) {
  auto d = parse_ack_subject("$JS.ACK.hub.ACCHASH.MAIL.relay.1.7.6.1764452985123000000.0.rnd42");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->stream, "MAIL");
  EXPECT_EQ(d->consumer, "relay");
  EXPECT_EQ(d->delivered, 1u);
  EXPECT_EQ(d->stream_seq, 7u);
  EXPECT_EQ(d->consumer_seq, 6u);
  EXPECT_EQ(d->pending, 0u);
}

TEST(AckMetadata, RejectsOtherSubjects) {
  EXPECT_FALSE(parse_ack_subject("").has_value());
  EXPECT_FALSE(parse_ack_subject("_INBOX.abc").has_value());
  EXPECT_FALSE(parse_ack_subject("$JS.ACK.MAIL.relay.x.1.1.1.1").has_value());
  EXPECT_FALSE(parse_ack_subject("$JS.ACK.MAIL.relay.1.1.1.1").has_value());
  EXPECT_FALSE(parse_ack_subject("$JS.NAK.MAIL.relay.1.1.1.1.1").has_value());
}

TEST(AckMetadata, NakBodyCarriesDelayInNanoseconds) {
  EXPECT_EQ(nak_body(std::chrono::milliseconds(0)), "-NAK");
  EXPECT_EQ(nak_body(std::chrono::milliseconds(1500)), "-NAK {\"delay\": 1500000000}");
}

}  // namespace
}  // namespace natsfleet::consume
