#include "base/ring_queue.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <string>

namespace natsfleet::base {
namespace {

std::vector<std::string> contents(const RingQueue<std::string>& q) {
  std::vector<std::string> out;
  for (size_t i = 0; i < q.size(); ++i) out.push_back(q[i]);
  return out;
}

TEST(RingQueue, KeepsOrderAcrossWrapAndGrowth) {
  RingQueue<std::string> q;
  for (int i = 0; i < 6; ++i) q.push_back(std::to_string(i));
  EXPECT_EQ(q.pop_front(), "0");
  EXPECT_EQ(q.pop_front(), "1");
  // Wraps round the first array of 8, then grows while wrapped.
  for (int i = 6; i < 20; ++i) q.push_back(std::to_string(i));
  q.push_front("1");
  ASSERT_EQ(q.size(), 19u);
  for (int i = 1; i < 20; ++i) EXPECT_EQ(q.pop_front(), std::to_string(i));
  EXPECT_TRUE(q.empty());
}

TEST(RingQueue, EraseKeepsTheOthersInOrderFromEitherSide) {
  RingQueue<std::string> q;
  for (const char* s : {"a", "b", "c", "d", "e", "f"}) q.push_back(s);
  EXPECT_EQ(q.erase(1), "b");  // front half
  EXPECT_EQ(q.erase(3), "e");  // back half
  EXPECT_EQ(q.erase(0), "a");
  EXPECT_EQ(contents(q), (std::vector<std::string>{"c", "d", "f"}));
  q.push_front("z");
  EXPECT_EQ(q.take_all(), (std::vector<std::string>{"z", "c", "d", "f"}));
  EXPECT_TRUE(q.empty());
}

TEST(RingQueue, MatchesADequeUnderRandomOperations) {
  std::mt19937 rng(7);
  RingQueue<std::string> q;
  std::deque<std::string> model;
  for (int step = 0; step < 20000; ++step) {
    const std::string value = std::to_string(step);
    switch (rng() % 5) {
      case 0:
      case 1:
        q.push_back(value);
        model.push_back(value);
        break;
      case 2:
        q.push_front(value);
        model.push_front(value);
        break;
      case 3:
        if (!model.empty()) {
          EXPECT_EQ(q.pop_front(), model.front());
          model.pop_front();
        }
        break;
      case 4:
        if (!model.empty()) {
          const size_t i = rng() % model.size();
          EXPECT_EQ(q.erase(i), model[i]);
          model.erase(model.begin() + static_cast<std::ptrdiff_t>(i));
        }
        break;
    }
    ASSERT_EQ(q.size(), model.size());
  }
  for (size_t i = 0; i < model.size(); ++i) EXPECT_EQ(q[i], model[i]);
}

}  // namespace
}  // namespace natsfleet::base
