#include "fleet/subject_stream_cache.h"

#include <gtest/gtest.h>

namespace natsfleet::fleet {
namespace {

using namespace std::chrono_literals;

// A broker stand-in: answers what the test sets and counts the questions.
struct Broker {
  Result<bool> answer = false;
  int asked = 0;
  SubjectStreamCache::Ask ask() {
    return [this](const std::string&) {
      ++asked;
      return answer;
    };
  }
};

TEST(SubjectStreamCache, AMissIsAskedAgainAtMostEveryRecheck) {
  SubjectStreamCache cache(2s);
  Broker broker;
  const auto t0 = Clock::now();
  auto first = cache.holds("a.b", broker.ask(), t0);
  ASSERT_TRUE(first);
  EXPECT_FALSE(*first);
  for (int i = 0; i < 100; ++i) {
    auto again = cache.holds("a.b", broker.ask(), t0 + 1900ms);
    ASSERT_TRUE(again);
    EXPECT_FALSE(*again);
  }
  EXPECT_EQ(broker.asked, 1);
  // A stream now holds it: seen on the next question, once the recheck interval has passed.
  broker.answer = true;
  auto later = cache.holds("a.b", broker.ask(), t0 + 2s);
  ASSERT_TRUE(later);
  EXPECT_TRUE(*later);
  EXPECT_EQ(broker.asked, 2);
  // Other subjects are asked on their own.
  EXPECT_TRUE(cache.holds("a.c", broker.ask(), t0 + 2s).value());
  EXPECT_EQ(broker.asked, 3);
}

TEST(SubjectStreamCache, AHitIsKeptUntilDoubted) {
  SubjectStreamCache cache(2s);
  Broker broker;
  broker.answer = true;
  const auto t0 = Clock::now();
  EXPECT_TRUE(cache.holds("a.b", broker.ask(), t0).value());
  EXPECT_TRUE(cache.holds("a.b", broker.ask(), t0 + 1h).value());
  EXPECT_EQ(broker.asked, 1);
  // No responders to a publish: asked again (the answer is older than the recheck interval)...
  cache.doubt("a.b");
  broker.answer = false;
  EXPECT_FALSE(cache.holds("a.b", broker.ask(), t0 + 1h).value());
  EXPECT_EQ(broker.asked, 2);
}

TEST(SubjectStreamCache, DoubtsDoNotFloodTheBroker) {
  SubjectStreamCache cache(2s);
  Broker broker;
  broker.answer = true;
  const auto t0 = Clock::now();
  EXPECT_TRUE(cache.holds("a.b", broker.ask(), t0).value());
  // A leader election: every publish finds no responders, the broker still says "held".
  for (int i = 0; i < 100; ++i) {
    cache.doubt("a.b");
    EXPECT_TRUE(cache.holds("a.b", broker.ask(), t0 + 3s + i * 10ms).value());
  }
  EXPECT_EQ(broker.asked, 2);  // t0 and t0 + 3s; the next is due at t0 + 5s
}

TEST(SubjectStreamCache, AnErrorIsNeverCachedNorReadAsNone) {
  SubjectStreamCache cache(2s);
  Broker broker;
  broker.answer = Result<bool>(Errc::timeout, "$JS.API.STREAM.NAMES: timeout");
  const auto t0 = Clock::now();
  auto failed = cache.holds("a.b", broker.ask(), t0);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, Errc::timeout);
  broker.answer = true;
  auto next = cache.holds("a.b", broker.ask(), t0 + 1ms);
  ASSERT_TRUE(next);
  EXPECT_TRUE(*next);
  EXPECT_EQ(broker.asked, 2);
}

}  // namespace
}  // namespace natsfleet::fleet
