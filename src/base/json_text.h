// JSON string literals written by hand where a JSON library would cost too much per line (sink
// records, JSON log lines), and the UTF-8 check that decides whether a payload can be text.
//
//   std::string line = "{\"msg\":";
//   base::append_json_string(line, text);  // always a valid literal, whatever the bytes
#pragma once

#include <string>
#include <string_view>

namespace natsfleet::base {

// Appends `text` as a JSON string literal, quotes included. '"', '\\' and control characters are
// escaped; a byte that is not part of valid UTF-8 becomes U+FFFD, so the result always parses.
void append_json_string(std::string& out, std::string_view text);

// The same, as a new string.
std::string json_string(std::string_view text);

// Strict UTF-8 (RFC 3629): rejects overlong forms, surrogates and code points above U+10FFFF.
bool is_valid_utf8(std::string_view bytes);

}  // namespace natsfleet::base
