#include "config/config_error.h"

#include <utility>

#include "natsfleet/redact.h"

namespace natsfleet::config {
namespace {

std::string describe(const std::string& file, int line, const std::string& key,
                     const std::string& problem) {
  std::string text = file + ":" + std::to_string(line) + ": ";
  if (!key.empty()) text += key + ": ";
  return text + problem;
}

}  // namespace

// A problem quoting a server or sink URL must not print its password or token: errors end up in
// CI logs and terminals.
ConfigError::ConfigError(std::string file, int line, std::string key, std::string problem)
    : std::runtime_error(describe(file, line, key, redact(problem))),
      file_(std::move(file)),
      line_(line),
      key_(std::move(key)),
      problem_(redact(problem)) {}

}  // namespace natsfleet::config
