#include "base/json_text.h"

#include <cstdint>
#include <cstring>

namespace natsfleet::base {
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

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    // A run of characters that need no escape goes in at once.
    size_t run = i;
    while (run < n && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' && p[run] != '\\') ++run;
    if (run > i) {
      out.append(text.data() + i, run - i);
      i = run;
      continue;
    }
    const unsigned char c = p[i];
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

std::string json_string(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  append_json_string(out, text);
  return out;
}

bool is_valid_utf8(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0;
  // ASCII, eight bytes at a time: most payloads are, and each is a whole sequence.
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, p + i, sizeof word);
    if (word & 0x8080808080808080ULL) break;
  }
  while (i < bytes.size()) {
    const size_t len = utf8_sequence(p + i, bytes.size() - i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

}  // namespace natsfleet::base
