#include "fleet/ordered/lane_schedule.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/clock.h"

namespace natsfleet::fleet {
namespace {

using namespace std::chrono_literals;
using Lane = LaneSchedule::Lane;

const LaneSchedule::Live kAllLive = [](const Lane&) { return true; };

// The keys `next` hands out at `now` until it has none, each finished at once.
std::vector<std::string> drain(LaneSchedule& schedule, LaneSchedule::Clock::time_point now,
                               const LaneSchedule::Live& live = kAllLive) {
  std::vector<std::string> keys;
  while (auto lane = schedule.next(now, live)) keys.push_back(lane->key);
  return keys;
}

TEST(LaneSchedule, ReadyLanesRunInTheOrderTheyBecameReady) {
  base::ManualClock clock;
  LaneSchedule schedule;
  for (const char* key : {"a", "b", "c"}) schedule.ready(Lane{0, key, nullptr});
  EXPECT_EQ(drain(schedule, clock.now()), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_FALSE(schedule.next(clock.now(), kAllLive));
}

TEST(LaneSchedule, AWaitingLaneRunsOnlyOnceItsTimeHasCome) {
  base::ManualClock clock;
  LaneSchedule schedule;
  schedule.later(Lane{0, "retry", nullptr}, clock.now() + 200ms);
  schedule.ready(Lane{0, "now", nullptr});
  EXPECT_EQ(schedule.waiting(), 1u);
  EXPECT_EQ(schedule.next_due(), clock.now() + 200ms);
  EXPECT_EQ(drain(schedule, clock.now()), std::vector<std::string>{"now"});
  clock.advance(199ms);
  EXPECT_TRUE(drain(schedule, clock.now()).empty());
  clock.advance(1ms);
  EXPECT_EQ(drain(schedule, clock.now()), std::vector<std::string>{"retry"});
  EXPECT_EQ(schedule.waiting(), 0u);
  EXPECT_FALSE(schedule.next_due());
}

TEST(LaneSchedule, WaitingLanesComeDueInTheOrderOfTheirTimes) {
  base::ManualClock clock;
  LaneSchedule schedule;
  schedule.later(Lane{0, "late", nullptr}, clock.now() + 2s);
  schedule.later(Lane{1, "early", nullptr}, clock.now() + 1s);
  EXPECT_EQ(schedule.next_due(), clock.now() + 1s);
  clock.advance(5s);
  EXPECT_EQ(drain(schedule, clock.now()), (std::vector<std::string>{"early", "late"}));
}

// A key's messages run one at a time: a lane whose handler runs is not handed out again; its
// verdict makes it ready once more.
TEST(LaneSchedule, ARunningLaneIsNotHandedOutAgainUntilItIsReadyAfterItsVerdict) {
  base::ManualClock clock;
  LaneSchedule schedule;
  schedule.ready(Lane{3, "k", nullptr});
  auto running = schedule.next(clock.now(), kAllLive);
  ASSERT_TRUE(running);
  schedule.start(*running);
  EXPECT_TRUE(schedule.any_running());
  schedule.ready(Lane{3, "k", nullptr});  // the reader found more of the key meanwhile
  schedule.ready(Lane{4, "k", nullptr});  // the same key of another partition is another lane
  EXPECT_EQ(drain(schedule, clock.now()), std::vector<std::string>{"k"});
  schedule.finished(*running);
  EXPECT_FALSE(schedule.any_running());
  schedule.ready(*running);
  EXPECT_EQ(drain(schedule, clock.now()), std::vector<std::string>{"k"});
}

TEST(LaneSchedule, AStaleLaneIsDroppedAndTheNextOneRuns) {
  base::ManualClock clock;
  LaneSchedule schedule;
  schedule.ready(Lane{0, "given-up", nullptr});
  schedule.ready(Lane{1, "kept", nullptr});
  const auto live = [](const Lane& lane) { return lane.partition == 1; };
  EXPECT_EQ(drain(schedule, clock.now(), live), std::vector<std::string>{"kept"});
  EXPECT_FALSE(schedule.next(clock.now(), kAllLive)) << "a dropped lane does not come back";
}

}  // namespace
}  // namespace natsfleet::fleet
