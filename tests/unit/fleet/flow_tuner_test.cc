// The pull window follows what the handlers are measured to take: half of ack_wait's worth of
// work, within concurrency, max_ack_pending, the message cap and the byte cap.
#include "fleet/flow_tuner.h"

#include <gtest/gtest.h>

namespace natsfleet::fleet {
namespace {

using namespace std::chrono_literals;

TEST(FlowTuner, AFixedBatchIsNeverResized) {
  FlowTuner tuner(/*batch=*/50, /*concurrency=*/1, /*max_ack_pending=*/1000, 30s);
  EXPECT_EQ(tuner.window(), 50);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(tuner.observe(10s, 100));
  EXPECT_EQ(tuner.window(), 50);
}

TEST(FlowTuner, TheFirstWindowIsFourPerHandlerWithinMaxAckPending) {
  EXPECT_EQ(FlowTuner(0, 2, 1000, 30s).window(), 8);
  EXPECT_EQ(FlowTuner(0, 2, 5, 30s).window(), 5);
  EXPECT_EQ(FlowTuner(0, 600, 5000, 30s).window(), FlowTuner::kMaxWindow);
}

TEST(FlowTuner, ASlowHandlerShrinksTheWindowAtItsFirstMessage) {
  FlowTuner tuner(0, 1, 1000, 30s);
  // 1 s a message: 15 fit in half of ack_wait.
  auto window = tuner.observe(1s, 100);
  ASSERT_TRUE(window);
  EXPECT_EQ(*window, 15);
  EXPECT_EQ(tuner.window(), 15);
  EXPECT_FALSE(tuner.observe(1s, 100)) << "the same window again is no change";
}

TEST(FlowTuner, FastHandlersGrowTheWindowEvery32ndMessage) {
  FlowTuner tuner(0, 1, 1000, 30s);
  for (int i = 0; i < 31; ++i) EXPECT_FALSE(tuner.observe(10us, 100)) << i;
  auto window = tuner.observe(10us, 100);
  ASSERT_TRUE(window);
  EXPECT_EQ(*window, 1000);  // max_ack_pending and the message cap
}

TEST(FlowTuner, LargeMessagesBoundTheWindowByBytes) {
  FlowTuner tuner(0, 1, 1000, 30s);
  std::optional<int> window;
  for (int i = 0; i < 32; ++i) window = tuner.observe(10us, 1024 * 1024);
  ASSERT_TRUE(window);
  EXPECT_EQ(*window, 32);  // 32 MiB of 1 MiB messages
}

TEST(FlowTuner, TheWindowNeverFallsBelowConcurrency) {
  FlowTuner tuner(0, 8, 1000, 30s);
  // 30 s a message on 8 handlers: 4 fit, but each handler may hold one.
  auto window = tuner.observe(30s, 100);
  ASSERT_TRUE(window);
  EXPECT_EQ(*window, 8);
}

}  // namespace
}  // namespace natsfleet::fleet
