// PullQueue, the waiting room of a pull work: a fetch takes what waits, at most its capacity; a
// full queue holds the handler back; closing releases a held handler and refuses fetches, and the
// delivering subscription's stop closes it.
#include "fleet/pull_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace natsfleet {
namespace {

using namespace std::chrono_literals;

Message message(int i) { return Message("jobs.run", "job-" + std::to_string(i), {}); }

TEST(PullQueue, AFetchTakesUpToItsCapacityInTheOrderPut) {
  PullQueue queue(3);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(queue.put(message(i)));
  auto taken = queue.fetch(10, 1ms);  // more than the capacity: what waits, without waiting
  ASSERT_TRUE(taken);
  ASSERT_EQ(taken->size(), 3u);
  EXPECT_EQ((*taken)[0].data(), "job-0");
  EXPECT_EQ((*taken)[2].data(), "job-2");
  auto none = queue.fetch(1, 1ms);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(PullQueue, AFullQueueHoldsTheHandlerUntilAFetchOrAClose) {
  PullQueue queue(1);
  ASSERT_TRUE(queue.put(message(0)));
  std::atomic<int> put{0};
  std::thread handler([&] {
    if (queue.put(message(1))) ++put;
    if (!queue.put(message(2))) put += 10;  // refused once closed
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(put.load(), 0) << "held while full";
  auto first = queue.fetch(1, 1s);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->size(), 1u);
  auto second = queue.fetch(1, 5s);  // the held put goes in once there is room
  ASSERT_TRUE(second);
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].data(), "job-1");
  queue.close();
  handler.join();
  EXPECT_EQ(put.load(), 11);
  auto closed = queue.fetch(1, 1ms);
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.error().code, Errc::shutting_down);
}

TEST(PullQueue, AFetchWaitingForMoreReturnsOnceEnoughArrive) {
  PullQueue queue(10);
  std::thread producer([&] {
    for (int i = 0; i < 4; ++i) {
      std::this_thread::sleep_for(5ms);
      ASSERT_TRUE(queue.put(message(i)));
    }
  });
  auto taken = queue.fetch(4, 60s);  // returns at the fourth, long before max_wait
  producer.join();
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->size(), 4u);
}

}  // namespace
}  // namespace natsfleet
