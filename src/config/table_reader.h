// One TOML table of a config file, read key by key: every type or value problem is a ConfigError
// naming the file, the line and the dotted key (the key's own line when present, the table's line
// when missing), thrown to parse_config(), which returns it. Every string has its ${VAR}s
// replaced (config/variables.h).
#pragma once

#include <toml++/toml.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "natsfleet/error.h"

namespace natsfleet::config {

using Names = std::span<const std::string_view>;

int line_of(const toml::node& node);
// "a, b, c", and "a, b or c" for a hint.
std::string join(Names names);
std::string join_or(Names names);
std::string in_quotes(std::string_view text);

class TableReader {
 public:
  TableReader(const std::string& file, const toml::table& table, std::string path)
      : file_(file), table_(table), path_(std::move(path)) {}

  std::string path(std::string_view key) const;

  int line() const { return std::max(1, line_of(table_)); }

  int line(std::string_view key) const;

  const toml::node* find(std::string_view key) const { return table_.get(key); }

  [[noreturn]] void fail(std::string_view key, std::string problem) const;

  [[noreturn]] void fail_table(std::string problem) const;

  // A check's error, if any, as the problem of `key` (check_table: of the whole table).
  void check(std::string_view key, const Result<void>& checked) const;
  void check_table(const Result<void>& checked) const;

  [[noreturn]] void fail_at(const toml::node& node, std::string key_path,
                            std::string problem) const;

  // A typo must not silently fall back to a default, so a key this table does not know is an error.
  // The first unknown key by line is reported, whatever order the table keeps its keys in.
  void reject_unknown(Names known, std::string_view where) const;

  std::optional<std::string> string(std::string_view key) const;

  // Every string value with its ${VAR}s replaced (config/variables.h); `fail` reports an error.
  static std::string expanded(const std::string& text,
                              const std::function<void(std::string)>& fail);

  std::string required_string(std::string_view key, std::string_view hint = {}) const;

  // A string that may not be empty when given.
  std::optional<std::string> non_empty_string(std::string_view key) const;

  std::optional<std::string> choice(std::string_view key,
                                    std::initializer_list<std::string_view> choices) const;

  // An integer in [min, max]; the message names the range. There is no integer without one.
  std::optional<int> integer(std::string_view key, std::int64_t min, std::int64_t max) const;
  std::optional<std::int64_t> integer64(std::string_view key, std::int64_t min,
                                        std::int64_t max) const;

  // Only strings: a bare 30 could mean seconds or std::chrono::milliseconds, and guessing wrong is
  // silent. A duration in [min, max]; the message names the range.
  std::optional<std::chrono::milliseconds> duration(std::string_view key,
                                                    std::chrono::milliseconds min,
                                                    std::chrono::milliseconds max) const;

  const toml::table* table(std::string_view key) const;

  // An array of strings, each element's error at its own line as key[i].
  std::optional<std::vector<std::string>> strings(std::string_view key) const;

  // [[name]] tables: absent or `name = []` is none.
  std::vector<const toml::table*> tables(std::string_view key) const;

 private:
  const std::string& file_;
  const toml::table& table_;
  std::string path_;
};

}  // namespace natsfleet::config
