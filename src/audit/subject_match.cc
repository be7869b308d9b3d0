#include "audit/subject_match.h"

namespace natsfleet::audit {
namespace {

std::vector<std::string_view> tokens(std::string_view subject) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t dot = subject.find('.'); dot != std::string_view::npos;
       dot = subject.find('.', start)) {
    out.push_back(subject.substr(start, dot - start));
    start = dot + 1;
  }
  out.push_back(subject.substr(start));
  return out;
}

}  // namespace

bool subject_within(std::string_view subject, std::string_view pattern) {
  const auto s = tokens(subject);
  const auto p = tokens(pattern);
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

}  // namespace natsfleet::audit
