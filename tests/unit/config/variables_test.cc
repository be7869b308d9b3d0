#include "config/variables.h"

#include <gtest/gtest.h>

#include <map>

namespace natsfleet::config {
namespace {

const std::map<std::string, std::string> kEnvironment = {
    {"HOST", "broker"}, {"PORT", "4222"}, {"EMPTY", ""}, {"_X1", "x"}};

std::optional<std::string> lookup(const std::string& name) {
  auto it = kEnvironment.find(name);
  if (it == kEnvironment.end()) return std::nullopt;
  return it->second;
}

std::string expand(std::string_view text) {
  auto out = expand_variables(text, lookup);
  if (!out) return "error: " + out.error().describe();
  return *out;
}

TEST(ExpandVariables, ReplacesEachVariableWithItsValue) {
  EXPECT_EQ(expand("nats://${HOST}:${PORT}"), "nats://broker:4222");
  EXPECT_EQ(expand("${_X1}${_X1}"), "xx");
  EXPECT_EQ(expand("no variables"), "no variables");
  EXPECT_EQ(expand(""), "");
}

TEST(ExpandVariables, TheDefaultStandsInForAnUnsetOrEmptyVariable) {
  EXPECT_EQ(expand("${UNSET:-nats://127.0.0.1:4222}"), "nats://127.0.0.1:4222");
  EXPECT_EQ(expand("${EMPTY:-fallback}"), "fallback");
  EXPECT_EQ(expand("${HOST:-fallback}"), "broker");
  EXPECT_EQ(expand("${UNSET:-}"), "");
  EXPECT_EQ(expand("${EMPTY}"), "") << "set but empty, without a default: empty";
}

TEST(ExpandVariables, DollarsThatAreNotVariablesStay) {
  EXPECT_EQ(expand("pa$word $ $5"), "pa$word $ $5");
  EXPECT_EQ(expand("$${HOST}"), "${HOST}");
  EXPECT_EQ(expand("$$"), "$$");
}

TEST(ExpandVariables, AnUnsetVariableIsAnErrorNamingIt) {
  EXPECT_EQ(expand("${UNSET}"),
            "error: environment variable UNSET is not set (give it a default with "
            "${UNSET:-value})");
}

TEST(ExpandVariables, MalformedReferencesAreErrors) {
  EXPECT_NE(expand("${HOST").find("without a closing"), std::string::npos);
  EXPECT_NE(expand("${}").find("is not a variable"), std::string::npos);
  EXPECT_NE(expand("${1X}").find("is not a variable"), std::string::npos);
  EXPECT_NE(expand("${A-B}").find("is not a variable"), std::string::npos);
}

TEST(ExpandVariables, AnErrorNeverShowsAValueOrADefault) {
  const std::string error = expand("${BAD NAME:-hunter2}");
  EXPECT_EQ(error.find("hunter2"), std::string::npos) << error;
}

}  // namespace
}  // namespace natsfleet::config
