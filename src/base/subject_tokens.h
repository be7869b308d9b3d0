// A NATS subject's tokens (the parts between dots) and back.
//
//   auto tokens = base::subject_tokens("orders.*.created");   // {"orders", "*", "created"}
//   tokens[1] = "eu";
//   base::join_subject(tokens);                                // "orders.eu.created"
//
// The views point into the subject given (or into whatever replaced a token): they must not
// outlive it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace natsfleet::base {

inline std::vector<std::string_view> subject_tokens(std::string_view subject) {
  std::vector<std::string_view> tokens;
  for (size_t start = 0;;) {
    const size_t dot = subject.find('.', start);
    tokens.push_back(subject.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return tokens;
    start = dot + 1;
  }
}

inline std::string join_subject(const std::vector<std::string_view>& tokens) {
  std::string out;
  for (const auto& t : tokens) {
    if (!out.empty()) out += '.';
    out += t;
  }
  return out;
}

}  // namespace natsfleet::base
