#include "config/table_reader.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "base/duration.h"
#include "config/config_error.h"
#include "config/variables.h"

namespace natsfleet::config {
namespace {

using std::chrono::milliseconds;

std::string type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

}  // namespace

int line_of(const toml::node& node) { return static_cast<int>(node.source().begin.line); }

std::string join(Names names) {
  std::string out;
  for (std::string_view name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// "a, b or c", for a hint.
std::string join_or(Names names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

std::string in_quotes(std::string_view text) { return "'" + std::string(text) + "'"; }

std::string TableReader::path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

int TableReader::line(std::string_view key) const {
  auto it = table_.find(key);
  if (it == table_.end()) return line();
  return static_cast<int>(it->first.source().begin.line);
}

void TableReader::fail(std::string_view key, std::string problem) const {
  throw ConfigError(file_, line(key), path(key), std::move(problem));
}

void TableReader::fail_table(std::string problem) const {
  throw ConfigError(file_, line(), path_, std::move(problem));
}

void TableReader::check(std::string_view key, const Result<void>& checked) const {
  if (!checked) fail(key, checked.error().message);
}

void TableReader::check_table(const Result<void>& checked) const {
  if (!checked) fail_table(checked.error().message);
}

void TableReader::fail_at(const toml::node& node, std::string key_path, std::string problem) const {
  throw ConfigError(file_, line_of(node), std::move(key_path), std::move(problem));
}

void TableReader::reject_unknown(Names known, std::string_view where) const {
  const toml::key* first = nullptr;
  for (auto&& [key, value] : table_) {
    if (std::find(known.begin(), known.end(), key.str()) != known.end()) continue;
    if (!first || key.source().begin.line < first->source().begin.line) first = &key;
  }
  if (first)
    fail(first->str(), "unknown key in " + std::string(where) + " (known: " + join(known) + ")");
}

std::optional<std::string> TableReader::string(std::string_view key) const {
  const toml::node* node = find(key);
  if (!node) return std::nullopt;
  if (!node->is_string()) fail(key, "expected a string, got " + type_name(*node));
  return expanded(node->as_string()->get(), [&](std::string problem) { fail(key, problem); });
}

std::string TableReader::expanded(const std::string& text,
                                  const std::function<void(std::string)>& fail) {
  auto value = expand_variables(text);
  if (!value) fail(value.error().describe());
  return std::move(value).value();
}

std::string TableReader::required_string(std::string_view key, std::string_view hint) const {
  auto value = string(key);
  if (!value)
    fail(key, "missing" + (hint.empty() ? std::string() : " (" + std::string(hint) + ")"));
  return *value;
}

std::optional<std::string> TableReader::non_empty_string(std::string_view key) const {
  auto value = string(key);
  if (value && value->empty()) fail(key, "is empty");
  return value;
}

std::optional<std::string> TableReader::choice(
    std::string_view key, std::initializer_list<std::string_view> choices) const {
  const Names allowed(choices.begin(), choices.size());
  auto value = string(key);
  if (value && std::find(allowed.begin(), allowed.end(), *value) == allowed.end())
    fail(key, "must be one of " + join(allowed) + ", got " + in_quotes(*value));
  return value;
}

std::optional<int> TableReader::integer(std::string_view key, std::int64_t min,
                                        std::int64_t max) const {
  auto value =
      integer64(key, std::max<std::int64_t>(min, INT_MIN), std::min<std::int64_t>(max, INT_MAX));
  if (!value) return std::nullopt;
  return static_cast<int>(*value);
}

std::optional<std::int64_t> TableReader::integer64(std::string_view key, std::int64_t min,
                                                   std::int64_t max) const {
  const toml::node* node = find(key);
  if (!node) return std::nullopt;
  if (!node->is_integer()) fail(key, "expected an integer, got " + type_name(*node));
  const std::int64_t value = node->as_integer()->get();
  if (value < min || value > max)
    fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
                  std::to_string(value));
  return value;
}

std::optional<milliseconds> TableReader::duration(std::string_view key, milliseconds min,
                                                  milliseconds max) const {
  const toml::node* node = find(key);
  if (!node) return std::nullopt;
  if (!node->is_string())
    fail(key, "expected a duration string like \"30s\", got " + type_name(*node));
  const std::string text =
      expanded(node->as_string()->get(), [&](std::string problem) { fail(key, problem); });
  auto value = base::parse_duration(text);
  if (!value && !base::looks_like_duration(text))
    fail(key, in_quotes(text) +
                  " is not a duration: use a string like \"250ms\", \"30s\", \"2m\" or \"1m30s\"");
  if (!value || *value < min || *value > max)
    fail(key, "must be between " + base::format_duration(min) + " and " +
                  base::format_duration(max) + ", got " + in_quotes(text));
  return value;
}

const toml::table* TableReader::table(std::string_view key) const {
  const toml::node* node = find(key);
  if (!node) return nullptr;
  if (!node->is_table()) fail(key, "expected a table, got " + type_name(*node));
  return node->as_table();
}

std::optional<std::vector<std::string>> TableReader::strings(std::string_view key) const {
  const toml::node* node = find(key);
  if (!node) return std::nullopt;
  if (!node->is_array()) fail(key, "expected an array of strings, got " + type_name(*node));
  const toml::array& items = *node->as_array();
  std::vector<std::string> out;
  for (size_t i = 0; i < items.size(); ++i) {
    const toml::node& item = *items.get(i);
    if (!item.is_string())
      fail_at(item, path(key) + "[" + std::to_string(i) + "]",
              "expected a string, got " + type_name(item));
    out.push_back(expanded(item.as_string()->get(), [&](std::string problem) {
      fail_at(item, path(key) + "[" + std::to_string(i) + "]", std::move(problem));
    }));
  }
  return out;
}

std::vector<const toml::table*> TableReader::tables(std::string_view key) const {
  std::vector<const toml::table*> out;
  const toml::node* node = find(key);
  if (!node) return out;
  if (!node->is_array())
    fail(key,
         "expected an array of tables ([[" + std::string(key) + "]]), got " + type_name(*node));
  const toml::array& items = *node->as_array();
  for (size_t i = 0; i < items.size(); ++i) {
    const toml::node& item = *items.get(i);
    if (!item.is_table())
      fail_at(item, path(key) + "[" + std::to_string(i) + "]",
              "expected a table, got " + type_name(item));
    out.push_back(item.as_table());
  }
  return out;
}

}  // namespace natsfleet::config
