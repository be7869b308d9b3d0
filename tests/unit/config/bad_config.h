// A config that must be refused, and the check every such case passes: the error names the
// file, the line and the dotted key, and says why. The cases are tables in *_errors_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "config/daemon_config.h"

namespace natsfleet::config {

struct BadConfig {
  std::string label;
  std::string text;  // line 1 is its first line
  int line;
  std::string key;
  std::string problem;  // a substring of the problem that says why
};

inline std::ostream& operator<<(std::ostream& out, const BadConfig& bad) {
  return out << bad.label;
}

// Parses `bad.text` as conf/bad.toml and checks the ConfigError it must return.
inline void expect_refused(const BadConfig& bad) {
  const auto parsed = parse_config(bad.text, "conf/bad.toml");
  ASSERT_FALSE(parsed) << "parsed without an error";
  const ConfigError& error = parsed.error();
  EXPECT_EQ(error.file(), "conf/bad.toml") << error.what();
  EXPECT_EQ(error.line(), bad.line) << error.what();
  EXPECT_EQ(error.key(), bad.key) << error.what();
  EXPECT_NE(error.problem().find(bad.problem), std::string::npos) << error.what();
  const std::string prefix =
      "conf/bad.toml:" + std::to_string(bad.line) + ": " + (bad.key.empty() ? "" : bad.key + ": ");
  EXPECT_EQ(std::string(error.what()).rfind(prefix, 0), 0u) << error.what();
}

inline std::string case_label(const testing::TestParamInfo<BadConfig>& param) {
  return param.param.label;
}

}  // namespace natsfleet::config
