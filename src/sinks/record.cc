#include "sinks/record.h"

#include <time.h>

#include <cstdio>

#include <chrono>

namespace natsfleet::sinks {
namespace {

// Length of the valid UTF-8 sequence starting at p[0] (of n bytes), or 0 when it is invalid.
// The second byte's range carries the rules against overlongs (E0, F0), surrogates (ED) and code
// points past U+10FFFF (F4).
size_t utf8_sequence(const unsigned char* p, size_t n) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t len = 0;
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
    return 0;  // C0, C1 (always overlong), F5..FF, or a stray continuation byte
  }
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if ((p[k] & 0xC0) != 0x80) return 0;
  return len;
}

// A JSON string literal. Subjects and headers come off the wire unchecked: a byte that is not
// part of valid UTF-8 becomes U+FFFD, so the line always parses. (The payload never reaches here
// unchecked: it is base64 when it is not UTF-8.) Written by hand: this runs once per message.
void append_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
      ++i;
      continue;
    }
    const size_t len = utf8_sequence(p + i, n - i);
    if (len == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
    } else {
      out.append(text.data() + i, len);
      i += len;
    }
  }
  out += '"';
}

void append_record(std::string& out, const Message& m, const std::string& subscription) {
  out += "\"subscription\":";
  append_string(out, subscription);
  out += ",\"subject\":";
  append_string(out, m.subject());
  const auto& d = m.delivery();
  int64_t time_ns = 0;
  if (d) {
    out += ",\"stream\":";
    append_string(out, d->stream);
    out += ",\"stream_seq\":" + std::to_string(d->stream_seq);
    out += ",\"consumer_seq\":" + std::to_string(d->consumer_seq);
    out += ",\"delivered\":" + std::to_string(d->delivered);
    time_ns = d->timestamp_ns;
  } else {
    out += ",\"stream\":null,\"stream_seq\":null,\"consumer_seq\":null,\"delivered\":1";
    time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  }
  out += ",\"time\":\"" + format_utc_millis(time_ns) + "\"";
  out += ",\"headers\":{";
  bool first = true;
  for (const auto& [key, values] : m.headers()) {
    if (!first) out += ',';
    first = false;
    append_string(out, key);
    out += ":[";
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) out += ',';
      append_string(out, values[i]);
    }
    out += ']';
  }
  out += '}';
  if (is_valid_utf8(m.data())) {
    out += ",\"data\":";
    append_string(out, m.data());
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

bool is_valid_utf8(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (size_t i = 0; i < bytes.size();) {
    const size_t len = utf8_sequence(p + i, bytes.size() - i);
    if (len == 0) return false;
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

}  // namespace natsfleet::sinks
