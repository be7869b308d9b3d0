// Typed fields of the log lines a thread writes: the JSON log format writes them beside "msg",
// so a log pipeline filters on `work` or `stream_seq` without parsing words; the text format
// leaves them out (its message says the same in words). Scopes nest: every field of every
// scope open on the thread goes with each line; an inner field replaces an outer one of the same
// key.
//
//   base::LogScope scope({{"work", name}, {"stream_seq", seq}});  // for every line below
//   base::log_event(log, spdlog::level::warn, {{"event", "lease-lost"}, {"partition", p}},
//                   "work {}: partition {}: lost", name, p);
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace natsfleet::base {

struct LogField {
  LogField(std::string_view k, std::string_view v) : key(k), value(std::string(v)) {}
  LogField(std::string_view k, const std::string& v) : key(k), value(v) {}
  LogField(std::string_view k, const char* v) : key(k), value(std::string(v)) {}
  template <std::signed_integral T>
  LogField(std::string_view k, T v) : key(k), value(static_cast<int64_t>(v)) {}
  template <std::unsigned_integral T>
  LogField(std::string_view k, T v) : key(k), value(static_cast<uint64_t>(v)) {}

  std::string_view key;  // a string literal: lives as long as the program
  std::variant<std::string, int64_t, uint64_t> value;
};

// Every field of the scopes open on this thread, outermost first.
std::span<const LogField> current_log_fields();

// Adds its fields to every line this thread writes while it lives.
class LogScope {
 public:
  explicit LogScope(std::initializer_list<LogField> fields);
  ~LogScope();
  LogScope(const LogScope&) = delete;
  LogScope& operator=(const LogScope&) = delete;

 private:
  size_t below_;  // fields of the outer scopes
};

}  // namespace natsfleet::base
