// The nemesis's schedule: the same seed gives the same plan, lanes never overlap themselves, and
// lengths follow ack_wait.
#include "chaos/schedule.h"

#include <gtest/gtest.h>

#include <set>

namespace natsfleet::chaos {
namespace {

using namespace std::chrono_literals;

bool same(const std::vector<ScheduledFault>& a, const std::vector<ScheduledFault>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].kind != b[i].kind || a[i].target != b[i].target || a[i].start != b[i].start ||
        a[i].duration != b[i].duration)
      return false;
  }
  return true;
}

TEST(Schedule, SameSeedSamePlanOtherSeedOtherPlan) {
  ScheduleOptions o;
  EXPECT_TRUE(same(make_schedule(42, o), make_schedule(42, o)));
  EXPECT_FALSE(same(make_schedule(42, o), make_schedule(43, o)));
}

TEST(Schedule, EachLaneRunsOneFaultAtATimeInsideTheRun) {
  ScheduleOptions o;
  o.length = 10min;
  const auto plan = make_schedule(7, o);
  ASSERT_GT(plan.size(), 20u);
  std::chrono::milliseconds broker_free{0}, replica_free{0};
  std::set<FaultKind> kinds;
  for (const auto& f : plan) {
    kinds.insert(f.kind);
    EXPECT_LT(f.start, o.length);
    auto& free = is_broker_fault(f.kind) ? broker_free : replica_free;
    EXPECT_GE(f.start, free) << describe(f);
    free = f.start + f.duration;
    if (is_broker_fault(f.kind)) {
      EXPECT_LT(f.target, o.nodes);
    } else {
      EXPECT_LT(f.target, o.replicas);
    }
  }
  EXPECT_EQ(kinds.size(), size_t(kFaultKinds)) << "ten minutes draw every kind";
}

TEST(Schedule, PausesOutlastAckWait) {
  ScheduleOptions o;
  o.length = 30min;
  o.ack_wait = 2s;
  for (const auto& f : make_schedule(3, o)) {
    if (f.kind == FaultKind::replica_pause) {
      EXPECT_GT(f.duration, o.ack_wait) << describe(f);
    }
    if (f.kind == FaultKind::consumer_delete) {
      EXPECT_EQ(f.duration.count(), 0);
    }
  }
}

TEST(Schedule, OnlyTheKindsAskedForAreDrawnAndAnEmptyLaneStaysQuiet) {
  ScheduleOptions o;
  o.length = 10min;
  o.only = {FaultKind::replica_kill};
  const auto plan = make_schedule(7, o);
  ASSERT_GT(plan.size(), 20u);
  for (const auto& f : plan) EXPECT_EQ(f.kind, FaultKind::replica_kill) << describe(f);
  EXPECT_EQ(fault_kind_named("replica-kill"), FaultKind::replica_kill);
  EXPECT_EQ(fault_kind_named("consumer-delete"), FaultKind::consumer_delete);
  EXPECT_FALSE(fault_kind_named("replica_kill"));
}

}  // namespace
}  // namespace natsfleet::chaos
