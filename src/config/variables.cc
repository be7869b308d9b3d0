#include "config/variables.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace natsfleet::config {
namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::optional<std::string> environment_variable(const std::string& name) {
  const char* value = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): read at load
  if (!value) return std::nullopt;
  return std::string(value);
}

Result<std::string> expand_variables(std::string_view text, const VariableLookup& lookup) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, 3, "$${") == 0) {
      out += "${";
      i += 3;
      continue;
    }
    if (text.compare(i, 2, "${") != 0) {
      out += text[i++];
      continue;
    }
    const size_t close = text.find('}', i + 2);
    if (close == std::string_view::npos)
      return Result<std::string>(Errc::invalid_argument,
                                 "'${' without a closing '}' (write $${ for a literal ${)");
    const std::string_view inside = text.substr(i + 2, close - i - 2);
    const size_t dash = inside.find(":-");
    const std::string name(inside.substr(0, dash));
    if (name.empty() || !name_start(name[0]) || !std::all_of(name.begin(), name.end(), name_char))
      return Result<std::string>(Errc::invalid_argument,
                                 "'${" + name +
                                     "...' is not a variable: a name is letters, digits and _, "
                                     "optionally followed by :-default");
    std::optional<std::string> value = lookup(name);
    if (dash != std::string_view::npos && (!value || value->empty()))
      value = std::string(inside.substr(dash + 2));
    if (!value)
      return Result<std::string>(Errc::invalid_argument,
                                 "environment variable " + name +
                                     " is not set (give it a default with ${" + name + ":-value})");
    out += *value;
    i = close + 1;
  }
  return out;
}

}  // namespace natsfleet::config
