// How the chaos run tells a message the broker lost from one natsfleet did not handle: what the
// stream holds at the sequence the publish's ack named, read from a real broker.
#include <gtest/gtest.h>

#include "chaos/chaos_run.h"
#include "support/broker_client.h"
#include "support/nats_server.h"

namespace natsfleet::chaos {
namespace {

TEST(StreamHolds, TellsThatMessageAnotherOneAndNothingApart) {
  testing::NatsServer server;
  testing::BrokerClient admin(server.url());
  admin.create_stream("HELD", {"held.>"});
  const uint64_t first = admin.publish("held.x", "c-0");
  const uint64_t second = admin.publish("held.x", "c-1");
  std::string error;
  EXPECT_EQ(stream_holds(admin.api(), "HELD", first, "c-0", &error), AtSequence::that_message);
  EXPECT_EQ(stream_holds(admin.api(), "HELD", second, "c-0", &error), AtSequence::another_message);
  EXPECT_EQ(stream_holds(admin.api(), "HELD", second + 5, "c-7", &error), AtSequence::nothing);
  EXPECT_EQ(stream_holds(admin.api(), "NOPE", 1, "c-0", &error), AtSequence::unknown);
  EXPECT_FALSE(error.empty());
}

TEST(StreamHolds, FindsAMessageAmongItsSubjectsWhenTheAckNamedNoSequence) {
  testing::NatsServer server;
  testing::BrokerClient admin(server.url());
  admin.create_stream("HELD", {"held.>"});
  admin.publish("held.x", "c-0");
  admin.publish("held.y", "c-1");
  const uint64_t third = admin.publish("held.x", "c-2");
  admin.publish("held.x", "c-3");
  std::string error;
  uint64_t seq = 0;
  EXPECT_EQ(stream_holds_on_subject(admin.api(), "HELD", "held.x", "c-2", &seq, &error),
            AtSequence::that_message);
  EXPECT_EQ(seq, third);
  EXPECT_EQ(stream_holds_on_subject(admin.api(), "HELD", "held.x", "c-1", &seq, &error),
            AtSequence::nothing)
      << "stored, but under another subject";
  EXPECT_EQ(stream_holds_on_subject(admin.api(), "HELD", "held.z", "c-9", &seq, &error),
            AtSequence::nothing);
  EXPECT_EQ(stream_holds_on_subject(admin.api(), "NOPE", "held.x", "c-0", &seq, &error),
            AtSequence::unknown);
}

}  // namespace
}  // namespace natsfleet::chaos
