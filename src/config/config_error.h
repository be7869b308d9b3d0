// The error a bad daemon config raises. It names the file, the line and the dotted key, so the
// message leads straight to the fix:
//   mailer.toml:12: work[1].sink.path: missing (a file sink needs a path)
#pragma once

#include <stdexcept>
#include <string>

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

}  // namespace natsfleet::config
