#include "base/utc_time.h"

#include <cstdio>
#include <ctime>

namespace natsfleet::base {

std::string format_utc_millis(int64_t unix_ns) {
  // Floor division, so instants before 1970 still get a millisecond part in [0, 999].
  int64_t ms = unix_ns / 1'000'000;
  if (unix_ns % 1'000'000 < 0) --ms;
  int64_t secs = ms / 1000;
  int64_t milli = ms % 1000;
  if (milli < 0) {
    milli += 1000;
    --secs;
  }
  const time_t t = static_cast<time_t>(secs);
  tm parts{};
  gmtime_r(&t, &parts);
  char buf[80];  // ample for any year tm can hold
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900,
                parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec,
                static_cast<int>(milli));
  return buf;
}

std::string format_utc_millis(std::chrono::system_clock::time_point time) {
  return format_utc_millis(
      std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count());
}

}  // namespace natsfleet::base
