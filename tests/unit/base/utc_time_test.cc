#include "base/utc_time.h"

#include <gtest/gtest.h>

namespace natsfleet::base {
namespace {

TEST(UtcTime, WritesRfc3339WithMilliseconds) {
  EXPECT_EQ(format_utc_millis(int64_t{0}), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_utc_millis(int64_t{999'999}), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_utc_millis(int64_t{1'000'000}), "1970-01-01T00:00:00.001Z");
  EXPECT_EQ(format_utc_millis(int64_t{1'795'988'985'123'456'789}), "2026-11-29T21:49:45.123Z");
}

TEST(UtcTime, FloorsInstantsBefore1970) {
  EXPECT_EQ(format_utc_millis(int64_t{-1}), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(format_utc_millis(int64_t{-1'000'000'000}), "1969-12-31T23:59:59.000Z");
}

TEST(UtcTime, ClockTimeMatchesNanoseconds) {
  const auto t =
      std::chrono::system_clock::time_point(std::chrono::milliseconds(1'795'988'985'123));
  EXPECT_EQ(format_utc_millis(t), "2026-11-29T21:49:45.123Z");
}

}  // namespace
}  // namespace natsfleet::base
