#include "base/subject_match.h"

#include "base/subject_tokens.h"

namespace natsfleet::base {

bool subject_within(std::string_view subject, std::string_view pattern) {
  const auto s = subject_tokens(subject);
  const auto p = subject_tokens(pattern);
  for (size_t i = 0; i < p.size(); ++i) {
    if (i >= s.size() || s[i].empty() || p[i].empty()) return false;
    if (p[i] == ">") return true;   // covers this token and all after it, wildcards included
    if (s[i] == ">") return false;  // the subject reaches further than a single token
    if (p[i] == "*") continue;
    if (s[i] != p[i]) return false;  // a literal pattern token admits only itself, never '*'
  }
  return s.size() == p.size();
}

bool subject_within_any(std::string_view subject, const std::vector<std::string>& patterns) {
  for (const auto& pattern : patterns)
    if (subject_within(subject, pattern)) return true;
  return false;
}

}  // namespace natsfleet::base
