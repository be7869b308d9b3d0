#include "base/utc_time.h"

#include <gtest/gtest.h>

#include <cstdint>

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

TEST(UtcTime, EachCallHasItsOwnSecondWhateverCameBefore) {
  // Calls in one second share its date and time; a call in another second (later, earlier, or
  // the same second after another) must not reuse them.
  const int64_t second = 1'795'988'985'000'000'000;
  EXPECT_EQ(format_utc_millis(second + 5'000'000), "2026-11-29T21:49:45.005Z");
  EXPECT_EQ(format_utc_millis(second + 999'000'000), "2026-11-29T21:49:45.999Z");
  EXPECT_EQ(format_utc_millis(second + 1'000'000'000), "2026-11-29T21:49:46.000Z");
  EXPECT_EQ(format_utc_millis(second - 86'400'000'000'000), "2026-11-28T21:49:45.000Z");
  EXPECT_EQ(format_utc_millis(second + 42'000'000), "2026-11-29T21:49:45.042Z");
  EXPECT_EQ(format_utc_millis(INT64_MAX), "2262-04-11T23:47:16.854Z");
}

TEST(UtcTime, ClockTimeMatchesNanoseconds) {
  const auto t =
      std::chrono::system_clock::time_point(std::chrono::milliseconds(1'795'988'985'123));
  EXPECT_EQ(format_utc_millis(t), "2026-11-29T21:49:45.123Z");
}

TEST(UtcTime, TheBrokersTimesAreReadToTheNanosecond) {
  const int64_t second = 1'795'988'985'000'000'000;  // 2026-11-29T21:49:45Z
  EXPECT_EQ(parse_rfc3339_nanos("2026-11-29T21:49:45Z"), second);
  EXPECT_EQ(parse_rfc3339_nanos("2026-11-29T21:49:45.123456789Z"), second + 123'456'789);
  EXPECT_EQ(parse_rfc3339_nanos("2026-11-29T21:49:45.1Z"), second + 100'000'000);
  EXPECT_EQ(parse_rfc3339_nanos("2026-11-29T22:49:45.5+01:00"), second + 500'000'000);
  EXPECT_EQ(parse_rfc3339_nanos("2026-11-29T21:19:45-00:30"), second + 0);
  EXPECT_EQ(parse_rfc3339_nanos("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parse_rfc3339_nanos("1969-12-31T23:59:59.5Z"), -500'000'000);
  EXPECT_EQ(parse_rfc3339_nanos("2024-02-29T00:00:00Z"), int64_t{1'709'164'800} * 1'000'000'000);
  // What format_utc_millis writes reads back.
  EXPECT_EQ(parse_rfc3339_nanos(format_utc_millis(second + 42'000'000)), second + 42'000'000);
}

TEST(UtcTime, TextThatIsNotRfc3339IsRefused) {
  for (const char* bad :
       {"", "2026-11-29", "2026-11-29T21:49:45", "2026-11-29 21:49:45Z", "2026-13-29T21:49:45Z",
        "2026-11-29T24:49:45Z", "2026-11-29T21:49:45.Z", "2026-11-29T21:49:45.1234567891Z",
        "2026-11-29T21:49:45+0100", "2026-11-29T21:49:45Zx", "x026-11-29T21:49:45Z"})
    EXPECT_FALSE(parse_rfc3339_nanos(bad)) << bad;
}

TEST(OlderThan, ComparesABrokerTimestampWithThisHostsClock) {
  using namespace std::chrono_literals;
  const int64_t minute_ago = unix_now_ns() - 60'000'000'000;
  EXPECT_TRUE(older_than(minute_ago, 30s));
  EXPECT_FALSE(older_than(minute_ago, 1h));
  EXPECT_FALSE(older_than(unix_now_ns() + 10'000'000'000, 0s)) << "a timestamp ahead of this host";
}

}  // namespace
}  // namespace natsfleet::base
