#include "natsfleet/redact.h"

#include <cctype>

namespace natsfleet {
namespace {

bool is_scheme_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}

bool ends_url(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || c == '"' || c == '\'' || c == '`' ||
         c == '<' || c == '>';
}

// "a=1&b" -> "a=***&***": the names stay (they say what was there), the values go.
std::string redact_pairs(std::string_view pairs) {
  std::string out;
  size_t start = 0;
  while (start <= pairs.size()) {
    const size_t amp = std::min(pairs.find('&', start), pairs.size());
    const std::string_view pair = pairs.substr(start, amp - start);
    if (!pair.empty()) {
      const size_t eq = pair.find('=');
      if (eq == std::string_view::npos)
        out += kRedacted;
      else
        out.append(pair.substr(0, eq + 1)).append(kRedacted);
    }
    if (amp == pairs.size()) break;
    out += '&';
    start = amp + 1;
  }
  return out;
}

}  // namespace

std::string redact_url(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url);
  std::string out(url.substr(0, scheme_end + 3));
  std::string_view rest = url.substr(scheme_end + 3);
  // The userinfo ends at the last '@' before the path. A password with an unescaped '/' in it
  // ("u:pa/ss@h") would put that '@' in the path, so an '@' after the first '/' still ends a
  // userinfo when what comes before that '/' is "user:" and not a port ("h:8080/@scope" is a
  // path): better a path shown as userinfo than half a password shown as a path.
  const size_t query_or_fragment = rest.find_first_of("?#");
  const std::string_view before_query = rest.substr(0, query_or_fragment);
  const size_t slash = before_query.find('/');
  size_t at = before_query.substr(0, slash).rfind('@');
  if (at == std::string_view::npos && slash != std::string_view::npos) {
    const std::string_view before = rest.substr(0, slash);
    const size_t colon = before.rfind(':');
    const std::string_view after_colon =
        colon == std::string_view::npos ? std::string_view() : before.substr(colon + 1);
    const bool port = !after_colon.empty() &&
                      after_colon.find_first_not_of("0123456789") == std::string_view::npos;
    if (colon != std::string_view::npos && !port && !before.starts_with('['))
      at = before_query.rfind('@');
  }
  const size_t host_start = at == std::string_view::npos ? 0 : at + 1;
  const size_t authority_end = std::min(rest.find_first_of("/?#", host_start), rest.size());
  std::string_view authority = rest.substr(0, authority_end);
  if (at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    const size_t colon = userinfo.find(':');
    if (colon == std::string_view::npos)
      out += kRedacted;  // a token alone
    else
      out.append(userinfo.substr(0, colon + 1)).append(kRedacted);
    out += '@';
    authority.remove_prefix(at + 1);
  }
  out += authority;
  rest.remove_prefix(authority_end);
  const size_t fragment = std::min(rest.find('#'), rest.size());
  const size_t query = std::min(rest.find('?'), fragment);
  out += rest.substr(0, query);  // the path
  if (query < fragment)
    out.append("?").append(redact_pairs(rest.substr(query + 1, fragment - query - 1)));
  if (fragment < rest.size()) out.append("#").append(redact_pairs(rest.substr(fragment + 1)));
  return out;
}

std::string redact_urls(const std::vector<std::string>& urls) {
  std::string out;
  for (const auto& url : urls) {
    if (!out.empty()) out += ", ";
    out += redact_url(url);
  }
  return out;
}

std::string redact(std::string_view text) {
  std::string out;
  size_t copied = 0;
  size_t search = 0;
  while (true) {
    const size_t mark = text.find("://", search);
    if (mark == std::string_view::npos) break;
    size_t begin = mark;
    while (begin > copied && is_scheme_char(text[begin - 1])) --begin;
    size_t end = mark + 3;
    while (end < text.size() && !ends_url(text[end])) ++end;
    // Punctuation after a URL is the sentence's: "cannot reach nats://h:1: refused".
    while (end > mark + 3 &&
           std::string_view(":,;.)]").find(text[end - 1]) != std::string_view::npos)
      --end;
    out.append(text.substr(copied, begin - copied));
    out += redact_url(text.substr(begin, end - begin));
    copied = end;
    search = end;
  }
  out.append(text.substr(copied));
  return out;
}

}  // namespace natsfleet
