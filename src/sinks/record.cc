#include "sinks/record.h"

#include <time.h>

#include <cstdio>

#include <chrono>
#include <nlohmann/json.hpp>

namespace natsfleet::sinks {
namespace {

using OrderedJson = nlohmann::ordered_json;

void append_record(OrderedJson& j, const Message& m, const std::string& subscription) {
  j["subscription"] = subscription;
  j["subject"] = m.subject();
  const auto& d = m.delivery();
  int64_t time_ns = 0;
  if (d) {
    j["stream"] = d->stream;
    j["stream_seq"] = d->stream_seq;
    j["consumer_seq"] = d->consumer_seq;
    j["delivered"] = d->delivered;
    time_ns = d->timestamp_ns;
  } else {
    j["stream"] = nullptr;
    j["stream_seq"] = nullptr;
    j["consumer_seq"] = nullptr;
    j["delivered"] = 1;
    time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  }
  j["time"] = format_utc_millis(time_ns);
  OrderedJson headers = OrderedJson::object();
  for (const auto& [key, values] : m.headers()) headers[key] = values;
  j["headers"] = std::move(headers);
  if (is_valid_utf8(m.data())) {
    j["data"] = m.data();
    j["encoding"] = "utf8";
  } else {
    j["data"] = base64_encode(m.data());
    j["encoding"] = "base64";
  }
}

// Subjects and headers come off the wire unchecked; replacing bad bytes keeps dump() from
// throwing and the line parseable. The payload never reaches here unchecked (base64 above).
std::string dump(const OrderedJson& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

std::string record_json(const Message& message, const std::string& subscription) {
  OrderedJson j = OrderedJson::object();
  append_record(j, message, subscription);
  return dump(j);
}

std::string record_json_with_id(uint64_t id, const Message& message,
                                const std::string& subscription) {
  OrderedJson j = OrderedJson::object();
  j["id"] = id;
  append_record(j, message, subscription);
  return dump(j);
}

bool is_valid_utf8(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    // The second byte's range carries the rules against overlongs (E0, F0), surrogates (ED)
    // and code points past U+10FFFF (F4).
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;  // C0, C1 (always overlong), F5..FF, or a stray continuation byte
    }
    if (n - i < len) return false;
    if (p[i + 1] < lo || p[i + 1] > hi) return false;
    for (size_t k = 2; k < len; ++k)
      if (!continuation(p[i + k])) return false;
    i += len;
  }
  return true;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8) | p[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{p[i]} << 16;
    if (rest == 2) v |= uint32_t{p[i + 1]} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

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

}  // namespace natsfleet::sinks
