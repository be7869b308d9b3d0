#include "fleet/ordered/log_cursor.h"

#include <gtest/gtest.h>

namespace natsfleet::fleet {
namespace {

using Step = LogCursor::Step;

// Arguments of follow(): consumer seq, pending after it, stream seq, highest stream seq read.

TEST(LogCursor, DeliveriesInConsumerOrderAreTaken) {
  LogCursor cursor;
  EXPECT_EQ(cursor.follow(1, 5, 10, 9), Step::take);
  EXPECT_EQ(cursor.follow(2, 4, 12, 10), Step::take);
  EXPECT_EQ(cursor.follow(3, 9, 13, 12), Step::take) << "pending may grow: messages came in";
  EXPECT_FALSE(cursor.hole());
}

TEST(LogCursor, ASkippedConsumerSequenceIsAHoleAndNothingAfterItIsTaken) {
  LogCursor cursor;
  ASSERT_EQ(cursor.follow(1, 5, 10, 9), Step::take);
  EXPECT_EQ(cursor.follow(3, 3, 12, 10), Step::hole) << "delivery 2 went missing";
  EXPECT_TRUE(cursor.hole());
  EXPECT_EQ(cursor.hole_why(), "delivery 3 came after 1");
  EXPECT_EQ(cursor.follow(2, 4, 11, 10), Step::hole) << "nothing is taken after a hole";
  EXPECT_EQ(cursor.follow(4, 2, 13, 10), Step::hole);
}

TEST(LogCursor, AFirstDeliveryOtherThanOneIsAHole) {
  LogCursor cursor;
  EXPECT_EQ(cursor.follow(4, 5, 10, 9), Step::hole);
  EXPECT_EQ(cursor.hole_why(), "delivery 4 came after 0");
}

TEST(LogCursor, ARedeliveryOfADeliveryTakenIsARepeat) {
  LogCursor cursor;
  ASSERT_EQ(cursor.follow(1, 5, 10, 9), Step::take);
  ASSERT_EQ(cursor.follow(2, 4, 11, 10), Step::take);
  EXPECT_EQ(cursor.follow(2, 4, 11, 11), Step::repeat) << "the last one again";
  EXPECT_EQ(cursor.follow(1, 9, 10, 11), Step::repeat) << "an older one again";
  EXPECT_FALSE(cursor.hole());
  EXPECT_EQ(cursor.follow(3, 3, 12, 11), Step::take) << "the log goes on where it was";
}

TEST(LogCursor, PendingFallingByMoreThanOneIsAHole) {
  LogCursor cursor;
  ASSERT_EQ(cursor.follow(1, 10, 10, 9), Step::take);
  EXPECT_EQ(cursor.follow(2, 9, 11, 10), Step::take);
  EXPECT_EQ(cursor.follow(3, 6, 14, 11), Step::hole) << "two messages passed undelivered";
  EXPECT_EQ(cursor.hole_why(), "pending fell from 9 to 6");
}

TEST(LogCursor, PendingSaysNothingOfAMessageReadAlready) {
  LogCursor cursor;
  ASSERT_EQ(cursor.follow(1, 10, 10, 20), Step::take);
  EXPECT_EQ(cursor.follow(2, 2, 11, 20), Step::take) << "stream seq 11 was read before";
}

TEST(LogCursor, ResetStartsANewConsumer) {
  LogCursor cursor;
  ASSERT_EQ(cursor.follow(1, 5, 10, 9), Step::take);
  ASSERT_EQ(cursor.follow(5, 1, 14, 10), Step::hole);
  cursor.reset();
  EXPECT_FALSE(cursor.hole());
  EXPECT_EQ(cursor.follow(1, 4, 11, 10), Step::take);
}

}  // namespace
}  // namespace natsfleet::fleet
