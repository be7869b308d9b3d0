#include "base/utc_time.h"

#include <climits>
#include <cstdint>
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
  // Records come many a second: the date and time of the last second seen are kept per thread,
  // so most calls only write the milliseconds.
  thread_local int64_t cached_secs = INT64_MIN;
  thread_local char cached[48];
  thread_local size_t cached_len = 0;
  if (secs != cached_secs) {
    const time_t t = static_cast<time_t>(secs);
    tm parts{};
    gmtime_r(&t, &parts);
    // Years of four digits (0..9999) are the record format; others are written as they come.
    const int n =
        std::snprintf(cached, sizeof cached, "%04d-%02d-%02dT%02d:%02d:%02d.", parts.tm_year + 1900,
                      parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof cached) return "invalid-time";
    cached_len = static_cast<size_t>(n);
    cached_secs = secs;
  }
  std::string out;
  out.reserve(cached_len + 4);
  out.append(cached, cached_len);
  out += static_cast<char>('0' + milli / 100);
  out += static_cast<char>('0' + milli / 10 % 10);
  out += static_cast<char>('0' + milli % 10);
  out += 'Z';
  return out;
}

std::string format_utc_millis(std::chrono::system_clock::time_point time) {
  return format_utc_millis(
      std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count());
}

}  // namespace natsfleet::base
