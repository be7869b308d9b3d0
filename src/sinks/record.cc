#include "sinks/record.h"

#include <time.h>

#include <cstdio>

#include <charconv>
#include <chrono>
#include <string_view>

#include "base/json_text.h"
#include "base/utc_time.h"

namespace natsfleet::sinks {
namespace {

// `,"key":value` without a temporary string.
void append_field(std::string& out, std::string_view key, uint64_t value) {
  out += ",\"";
  out += key;
  out += "\":";
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out.append(digits, end);
}

void append_record(std::string& out, const Message& m, const std::string& subscription) {
  out += "\"subscription\":";
  base::append_json_string(out, subscription);
  out += ",\"subject\":";
  base::append_json_string(out, m.subject());
  const auto& d = m.delivery();
  int64_t time_ns = 0;
  if (d) {
    out += ",\"stream\":";
    base::append_json_string(out, d->stream);
    append_field(out, "stream_seq", d->stream_seq);
    append_field(out, "consumer_seq", d->consumer_seq);
    append_field(out, "delivered", d->delivered);
    time_ns = d->timestamp_ns;
  } else {
    out += ",\"stream\":null,\"stream_seq\":null,\"consumer_seq\":null,\"delivered\":1";
    time_ns = base::unix_now_ns();
  }
  if (const auto& fence = m.fence()) {
    append_field(out, "partition", static_cast<uint64_t>(fence->partition));
    append_field(out, "epoch", static_cast<uint64_t>(fence->epoch));
  } else {
    out += ",\"partition\":null,\"epoch\":null";
  }
  out += ",\"time\":\"";
  out += base::format_utc_millis(time_ns);
  out += '"';
  out += ",\"headers\":{";
  bool first = true;
  for (const auto& [key, values] : m.headers()) {
    if (!first) out += ',';
    first = false;
    base::append_json_string(out, key);
    out += ":[";
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) out += ',';
      base::append_json_string(out, values[i]);
    }
    out += ']';
  }
  out += '}';
  if (base::is_valid_utf8(m.data())) {
    out += ",\"data\":";
    base::append_json_string(out, m.data());
    out += ",\"encoding\":\"utf8\"";
  } else {
    out += ",\"data\":\"" + base64_encode(m.data()) + "\",\"encoding\":\"base64\"";
  }
}

}  // namespace

std::string record_json(const Message& message, const std::string& subscription) {
  std::string out;
  out.reserve(192 + message.data().size() + message.subject().size());
  out += '{';
  append_record(out, message, subscription);
  out += '}';
  return out;
}

std::string record_json_with_id(uint64_t id, const Message& message,
                                const std::string& subscription) {
  std::string out;
  out.reserve(208 + message.data().size() + message.subject().size());
  out += "{\"id\":" + std::to_string(id) + ",";
  append_record(out, message, subscription);
  out += '}';
  return out;
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

}  // namespace natsfleet::sinks
