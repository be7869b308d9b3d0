#include "health/latency_histogram.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "health/daemon_metrics.h"

namespace natsfleet::health {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// Index of each bound in LatencyHistogram::kUpperBoundsSeconds, for readability.
constexpr std::size_t kLe1ms = 0, kLe5ms = 1, kLe10ms = 2, kLe1s = 8, kLe10s = 11, kInf = 12;

TEST(LatencyHistogram, HasThePrometheusDefaultLayout) {
  const std::vector<double> expected = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                        0.25,  0.5,   1,    2.5,   5,    10};
  EXPECT_EQ(std::vector<double>(LatencyHistogram::kUpperBoundsSeconds.begin(),
                                LatencyHistogram::kUpperBoundsSeconds.end()),
            expected);
  EXPECT_EQ(LatencyHistogram::kBucketCount, 13u);
}

TEST(LatencyHistogram, UpperBoundsAreInclusive) {
  LatencyHistogram h;
  h.observe(milliseconds(1));                   // le=0.001
  h.observe(milliseconds(1) + nanoseconds(1));  // le=0.005
  h.observe(milliseconds(5));                   // le=0.005
  const auto s = h.snapshot();
  EXPECT_EQ(s.cumulative[kLe1ms], 1u);
  EXPECT_EQ(s.cumulative[kLe5ms], 3u);
  EXPECT_EQ(s.cumulative[kLe10ms], 3u);
}

TEST(LatencyHistogram, BucketsAreCumulativeAndInfEqualsCount) {
  LatencyHistogram h;
  h.observe(nanoseconds(0));
  h.observe(milliseconds(7));
  h.observe(milliseconds(700));
  h.observe(seconds(10));
  h.observe(seconds(10) + nanoseconds(1));
  h.observe(seconds(3600));
  const auto s = h.snapshot();
  const std::vector<uint64_t> expected = {1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 4, 6};
  EXPECT_EQ(std::vector<uint64_t>(s.cumulative.begin(), s.cumulative.end()), expected);
  EXPECT_EQ(s.count, 6u);
  EXPECT_EQ(s.cumulative[kInf], s.count);
  EXPECT_EQ(s.cumulative[kLe10s], 4u);
  EXPECT_EQ(s.cumulative[kLe1s], 3u);
}

TEST(LatencyHistogram, SumIsInSecondsFromExactNanoseconds) {
  LatencyHistogram h;
  h.observe(milliseconds(250));
  h.observe(nanoseconds(1));
  h.observe(seconds(2));
  EXPECT_EQ(h.snapshot().sum_seconds, 2250000001.0 / 1e9);
}

TEST(LatencyHistogram, NegativeLatencyCountsAsZero) {
  LatencyHistogram h;
  h.observe(milliseconds(-5));
  const auto s = h.snapshot();
  EXPECT_EQ(s.cumulative[kLe1ms], 1u);
  EXPECT_EQ(s.sum_seconds, 0.0);
}

TEST(LatencyHistogram, ConcurrentObserversLoseNothing) {
  LatencyHistogram h;
  constexpr int kThreads = 4;
  constexpr int kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < kEach; ++i) h.observe(milliseconds(t * 3));
    });
  }
  for (auto& t : threads) t.join();
  const auto s = h.snapshot();
  EXPECT_EQ(s.count, uint64_t{kThreads * kEach});
  EXPECT_EQ(s.cumulative[kLe1ms], uint64_t{kEach});       // 0ms
  EXPECT_EQ(s.cumulative[kLe5ms], uint64_t{2 * kEach});   // 3ms
  EXPECT_EQ(s.cumulative[kLe10ms], uint64_t{4 * kEach});  // 6ms, 9ms
  EXPECT_EQ(s.sum_seconds, static_cast<double>((0 + 3 + 6 + 9) * kEach) / 1e3);
}

TEST(DaemonMetrics, CountsPerSubscriptionAndOutcome) {
  DaemonMetrics m;
  SubscriptionMetrics& b = m.register_subscription("b");
  SubscriptionMetrics& a = m.register_subscription("a");
  EXPECT_EQ(&m.register_subscription("a"), &a) << "again: the same counters";
  a.observe(milliseconds(2), Disposition::Kind::ack);
  a.observe(milliseconds(3), Disposition::Kind::ack);
  a.observe(milliseconds(20), Disposition::Kind::nak);
  b.observe(seconds(20), Disposition::Kind::term);
  a.count_published(3);
  a.count_published(2);
  b.count_sink_error();

  const auto snap = m.snapshot();
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_EQ(snap[0].name, "a");
  EXPECT_EQ(snap[0].acked, 2u);
  EXPECT_EQ(snap[0].naked, 1u);
  EXPECT_EQ(snap[0].termed, 0u);
  EXPECT_EQ(snap[0].published, 5u);
  EXPECT_EQ(snap[0].sink_errors, 0u);
  EXPECT_EQ(snap[0].latency.count, 3u);
  EXPECT_EQ(snap[0].latency.cumulative[kLe5ms], 2u);
  EXPECT_EQ(snap[1].name, "b");
  EXPECT_EQ(snap[1].termed, 1u);
  EXPECT_EQ(snap[1].sink_errors, 1u);
  EXPECT_EQ(snap[1].latency.cumulative[kLe10s], 0u);
  EXPECT_EQ(snap[1].latency.cumulative[kInf], 1u);
}

TEST(DaemonMetrics, CountersHandedOutStayPutWhileSubscriptionsAreAdded) {
  DaemonMetrics m;
  SubscriptionMetrics& first = m.register_subscription("m");
  for (int i = 0; i < 200; ++i) m.register_subscription("s" + std::to_string(i));
  first.observe(milliseconds(1), Disposition::Kind::ack);
  EXPECT_FALSE(m.has_subscription("ghost"));
  for (const auto& s : m.snapshot()) {
    if (s.name == "m") {
      EXPECT_EQ(s.acked, 1u);
    }
  }
}

}  // namespace
}  // namespace natsfleet::health
