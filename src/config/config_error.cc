#include "config/config_error.h"

#include <utility>

namespace natsfleet::config {
namespace {

std::string describe(const std::string& file, int line, const std::string& key,
                     const std::string& problem) {
  std::string text = file + ":" + std::to_string(line) + ": ";
  if (!key.empty()) text += key + ": ";
  return text + problem;
}

}  // namespace

ConfigError::ConfigError(std::string file, int line, std::string key, std::string problem)
    : std::runtime_error(describe(file, line, key, problem)),
      file_(std::move(file)),
      line_(line),
      key_(std::move(key)),
      problem_(std::move(problem)) {}

}  // namespace natsfleet::config
