#include <gtest/gtest.h>

#include <map>
#include <string>

#include "fleet/ordered/partition_reader.h"

namespace natsfleet::fleet {
namespace {

// A stream as a get by subject sees it: the partition's messages by sequence.
struct Stream {
  std::map<uint64_t, std::string> messages;
  int gets = 0;
  GetNext get() {
    return [this](uint64_t seq) -> Result<nats::StoredMessage> {
      ++gets;
      auto it = messages.lower_bound(seq);
      if (it == messages.end())
        return Error{std::error_code(nats::kJsNoMessageFound, jetstream_category()),
                     "no message found"};
      return nats::StoredMessage{.subject = it->second, .seq = it->first};
    };
  }
};

std::vector<uint64_t> seqs(const std::vector<nats::StoredMessage>& ms) {
  std::vector<uint64_t> out;
  for (const auto& m : ms) out.push_back(m.seq);
  return out;
}

TEST(ReadDelivered, ReturnsWhatWasDeliveredAfterTheCheckpointAndCountsFromTheAckFloor) {
  Stream s{.messages = {{3, "a"}, {5, "b"}, {8, "c"}, {9, "d"}, {12, "e"}}};
  // Acked through 3; done (the lease's checkpoint) through 5; delivered through 10: 5, 8, 9.
  auto read = read_delivered(s.get(), 3, 5, 10, 3);
  ASSERT_TRUE(read) << read.error().describe();
  EXPECT_EQ(seqs(*read), (std::vector<uint64_t>{8, 9}));
}

TEST(ReadDelivered, FewerMessagesThanTheConsumerHasPendingIsAnError) {
  // The consumer delivered 5, 8 and 9; the stream's leader has stored only up to 8.
  Stream s{.messages = {{5, "b"}, {8, "c"}}};
  auto read = read_delivered(s.get(), 3, 5, 9, 3);
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().describe().find("holds 2 of"), std::string::npos)
      << read.error().describe();
}

TEST(ReadDelivered, MoreMessagesThanTheConsumerHasPendingIsAnErrorFoundAtTheFirstOneTooMany) {
  // A consumer that says it delivered through 1,000 from an ack floor of 0 with 2 awaiting an
  // ack: its state does not add up, and the reads stop at the third message.
  Stream s;
  for (uint64_t seq = 1; seq <= 1000; ++seq) s.messages[seq] = "m";
  auto read = read_delivered(s.get(), 0, 0, 1000, 2);
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().describe().find("holds more than 2 of"), std::string::npos)
      << read.error().describe();
  EXPECT_EQ(s.gets, 3);
}

TEST(ReadDelivered, NothingDeliveredAfterTheFloorReadsNothing) {
  Stream s{.messages = {{3, "a"}}};
  auto read = read_delivered(s.get(), 3, 3, 3, 0);
  ASSERT_TRUE(read);
  EXPECT_TRUE(read->empty());
  EXPECT_EQ(s.gets, 0);
}

}  // namespace
}  // namespace natsfleet::fleet
