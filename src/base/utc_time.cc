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

namespace {

// `n` digits at `at` as a number; false if any is not a digit.
bool digits(std::string_view text, size_t at, size_t n, int& out) {
  if (at + n > text.size()) return false;
  out = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    out = out * 10 + (text[i] - '0');
  }
  return true;
}

// Days from 1970-01-01 to the date (proleptic Gregorian calendar).
int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

std::optional<int64_t> parse_rfc3339_nanos(std::string_view text) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(text, 0, 4, year) || text.size() < 20 || text[4] != '-' ||
      !digits(text, 5, 2, month) || text[7] != '-' || !digits(text, 8, 2, day) ||
      (text[10] != 'T' && text[10] != 't') || !digits(text, 11, 2, hour) || text[13] != ':' ||
      !digits(text, 14, 2, minute) || text[16] != ':' || !digits(text, 17, 2, second))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return std::nullopt;
  size_t at = 19;
  int64_t fraction = 0;
  if (at < text.size() && text[at] == '.') {
    size_t n = 0;
    for (++at; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at, ++n)
      if (n < 9) fraction = fraction * 10 + (text[at] - '0');
    if (n == 0 || n > 9) return std::nullopt;
    for (; n < 9; ++n) fraction *= 10;
  }
  int64_t offset_seconds = 0;
  if (at == text.size() - 1 && (text[at] == 'Z' || text[at] == 'z')) {
  } else if (at + 6 == text.size() && (text[at] == '+' || text[at] == '-') && text[at + 3] == ':') {
    int oh = 0, om = 0;
    if (!digits(text, at + 1, 2, oh) || !digits(text, at + 4, 2, om) || oh > 23 || om > 59)
      return std::nullopt;
    offset_seconds = (oh * 3600 + om * 60) * (text[at] == '+' ? 1 : -1);
  } else {
    return std::nullopt;
  }
  const int64_t seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 +
                          second - offset_seconds;
  return seconds * 1'000'000'000 + fraction;
}

int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool older_than(int64_t unix_ns, std::chrono::nanoseconds age) {
  return unix_now_ns() - unix_ns >= age.count();
}

}  // namespace natsfleet::base
