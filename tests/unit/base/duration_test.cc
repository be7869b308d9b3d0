#include "base/duration.h"

#include <gtest/gtest.h>

namespace natsfleet::base {
namespace {

using std::chrono::milliseconds;

// What the daemon config has always taken: integer parts, largest unit first.
TEST(Duration, ReadsTheConfigForms) {
  EXPECT_EQ(parse_duration("250ms"), milliseconds(250));
  EXPECT_EQ(parse_duration("30s"), milliseconds(30'000));
  EXPECT_EQ(parse_duration("2m"), milliseconds(120'000));
  EXPECT_EQ(parse_duration("1h"), milliseconds(3'600'000));
  EXPECT_EQ(parse_duration("1m30s"), milliseconds(90'000));
  EXPECT_EQ(parse_duration("1h2m3s4ms"), milliseconds(3'723'004));
  EXPECT_EQ(parse_duration("90s"), milliseconds(90'000));
  EXPECT_EQ(parse_duration("0s"), milliseconds(0));
}

// What a worker's "delay" has always taken: fractions, sub-millisecond units, any order.
TEST(Duration, ReadsTheWorkerForms) {
  EXPECT_EQ(parse_duration("5s"), milliseconds(5'000));
  EXPECT_EQ(parse_duration("1.5s"), milliseconds(1'500));
  EXPECT_EQ(parse_duration(".5s"), milliseconds(500));
  EXPECT_EQ(parse_duration("5.s"), milliseconds(5'000));
  EXPECT_EQ(parse_duration("0.25m"), milliseconds(15'000));
  EXPECT_EQ(parse_duration("1500us"), milliseconds(2)) << "1.5ms rounds half up";
  EXPECT_EQ(parse_duration("1499999ns"), milliseconds(1));
  EXPECT_EQ(parse_duration("2000000ns"), milliseconds(2));
  EXPECT_EQ(parse_duration("30s1m"), milliseconds(90'000));
  EXPECT_EQ(parse_duration("1m1m"), milliseconds(120'000));
  EXPECT_EQ(parse_duration("1ms1s"), milliseconds(1'001));
  EXPECT_EQ(parse_duration("1.0005s"), milliseconds(1'001));
}

TEST(Duration, RefusesAnythingElse) {
  for (const char* bad : {"",
                          "30",
                          "30 s",
                          " 30s",
                          "30s ",
                          "-1s",
                          "+1s",
                          "-5s",
                          "1x",
                          "5d",
                          "s",
                          "ms",
                          ".s",
                          "1.2.3s",
                          "1e3s",
                          "30S",
                          "30sec",
                          "1s30",
                          "99999999999999999999s",
                          "9223372036854775807h"})
    EXPECT_FALSE(parse_duration(bad).has_value()) << '"' << bad << '"';
}

// Any duration read fits the broker's int64 nanoseconds: "9999999999h" was read, then overflowed.
TEST(Duration, RefusesWhatNanosecondsCannotHold) {
  EXPECT_EQ(parse_duration("876000h"), kMaxDuration);
  EXPECT_FALSE(parse_duration("876000h1ms").has_value());
  EXPECT_FALSE(parse_duration("9999999999h").has_value());
  EXPECT_FALSE(parse_duration("99999999h").has_value());
  EXPECT_FALSE(parse_duration("99999999999999999999999999h59m").has_value());
  EXPECT_FALSE(parse_duration("99999999999999999999.5h").has_value());
  using NanosAsDouble = std::chrono::duration<double, std::nano>;
  EXPECT_LT(std::chrono::duration_cast<NanosAsDouble>(kMaxDuration).count(), 9.2e18);
  // Written like a duration, only too long: the config says "too long", not "not a duration".
  EXPECT_TRUE(looks_like_duration("9999999999h"));
  EXPECT_TRUE(looks_like_duration("99999999999999999999999999h59m"));
  EXPECT_FALSE(looks_like_duration("30"));
  EXPECT_FALSE(looks_like_duration("1s 1m"));
}

TEST(Duration, FormatsTheShortestFormThatReadsBack) {
  EXPECT_EQ(format_duration(milliseconds(0)), "0s");
  EXPECT_EQ(format_duration(milliseconds(250)), "250ms");
  EXPECT_EQ(format_duration(milliseconds(90'000)), "1m30s");
  EXPECT_EQ(format_duration(milliseconds(3'600'000)), "1h");
  EXPECT_EQ(format_duration(milliseconds(1'500)), "1s500ms");
  EXPECT_EQ(format_duration(milliseconds(-1'500)), "-1s500ms");
  for (auto ms : {1, 999, 1000, 61'001, 3'723'004, 86'400'000})
    EXPECT_EQ(parse_duration(format_duration(milliseconds(ms))), milliseconds(ms));
}

}  // namespace
}  // namespace natsfleet::base
