// What is wrong with a daemon config. It names the file, the line and the dotted key, so the
// message leads straight to the fix:
//   mailer.toml:12: work[1].sink.path: missing (a file sink needs a path)
// The config's readers return it in a ConfigResult (only the parser throws it, to unwind to its
// entry point).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace natsfleet::config {

class ConfigError : public std::runtime_error {
 public:
  // what() is "<file>:<line>: <key>: <problem>". Line 0 means no line applies (the file cannot be
  // read); an empty key means no key applies (a TOML syntax error) and drops the "<key>: " part.
  ConfigError(std::string file, int line, std::string key, std::string problem);

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  // Dotted path with 0-based indexes, like "work[1].sink.path".
  const std::string& key() const { return key_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string file_;
  int line_;
  std::string key_;
  std::string problem_;
};

// A config read and checked, or the first problem found in it.
template <typename T>
class [[nodiscard]] ConfigResult {
 public:
  ConfigResult(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  ConfigResult(ConfigError error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  // The config; on a problem, throws that ConfigError (what() says file, line and key).
  T& value() & { return check(), std::get<0>(v_); }
  const T& value() const& { return check(), std::get<0>(v_); }
  T&& value() && { return check(), std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  // Only when !ok().
  const ConfigError& error() const { return std::get<1>(v_); }

 private:
  void check() const {
    if (!ok()) throw std::get<1>(v_);
  }
  std::variant<T, ConfigError> v_;
};

}  // namespace natsfleet::config
