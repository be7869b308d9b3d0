#include "daemon/descriptor_budget.h"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <string>

namespace natsfleet::daemon {
namespace {

constexpr std::size_t kHealthConnections = 128;

config::DaemonConfig relay_config(const std::string& extra_sink_keys = "") {
  return config::parse_config(R"(name = "relay"
servers = ["nats://127.0.0.1:4222"]
[[work]]
name = "w"
subject = "a.b"
concurrency = 8
sink = { type = "http", url = "https://hooks.example.com/x" }
[[broadcast]]
name = "status"
subject = "member.*.status"
sink = { type = "websocket")" + extra_sink_keys +
                                  R"( }
)",
                              "relay.toml")
      .value();
}

std::uint64_t total(const DescriptorBudget& b) {
  std::uint64_t sum = b.reserved;
  for (const auto& g : b.gateways) sum += g.http_connections + 3 + g.max_sessions;
  return sum;
}

TEST(DescriptorBudget, SessionsGetWhatTheLimitLeavesAfterEverythingElse) {
  const auto budget = plan_descriptors(1024, relay_config(), kHealthConnections, false);
  ASSERT_EQ(budget.gateways.size(), 1u);
  const auto& g = budget.gateways[0];
  EXPECT_TRUE(g.computed);
  EXPECT_FALSE(budget.starved);
  // base 64, health 129, the http sink 18, spare 64.
  EXPECT_EQ(budget.reserved, 64u + 129u + 18u + 64u);
  EXPECT_EQ(g.http_connections, (1024u - budget.reserved) / 8);
  EXPECT_EQ(total(budget), 1024u) << "every descriptor is accounted for, none twice";
  EXPECT_GT(g.max_sessions, 500u);
  EXPECT_NE(budget.explanation.find("status " + std::to_string(g.max_sessions)), std::string::npos)
      << budget.explanation;
  EXPECT_NE(budget.explanation.find("RLIMIT_NOFILE) is 1024"), std::string::npos)
      << budget.explanation;
}

TEST(DescriptorBudget, AHigherLimitGivesMoreSessionsAndCapsPageConnections) {
  const auto budget = plan_descriptors(65536, relay_config(), kHealthConnections, false);
  EXPECT_EQ(budget.gateways[0].http_connections, 1024u);
  EXPECT_GT(budget.gateways[0].max_sessions, 55000u);
  EXPECT_LE(total(budget), 65536u);
}

TEST(DescriptorBudget, AConfiguredMaxSessionsIsKeptAndFlaggedWhenTheLimitCannotHoldIt) {
  auto fits =
      plan_descriptors(1024, relay_config(", max_sessions = 100"), kHealthConnections, false);
  EXPECT_EQ(fits.gateways[0].max_sessions, 100u);
  EXPECT_FALSE(fits.gateways[0].computed);
  EXPECT_FALSE(fits.gateways[0].over_limit);
  auto too_many =
      plan_descriptors(1024, relay_config(", max_sessions = 10000"), kHealthConnections, false);
  EXPECT_EQ(too_many.gateways[0].max_sessions, 10000u);
  EXPECT_TRUE(too_many.gateways[0].over_limit);
  EXPECT_NE(too_many.explanation.find("MORE than the limit leaves"), std::string::npos)
      << too_many.explanation;
}

TEST(DescriptorBudget, ATinyLimitLeavesNoSessionsAndSaysSo) {
  const auto budget = plan_descriptors(256, relay_config(), kHealthConnections, false);
  EXPECT_EQ(budget.gateways[0].max_sessions, 0u);
  EXPECT_TRUE(budget.starved);
}

TEST(DescriptorBudget, AnEmbeddedBrokersPipesAreKept) {
  const auto remote = plan_descriptors(1024, relay_config(), kHealthConnections, false);
  const auto embedded = plan_descriptors(1024, relay_config(), kHealthConnections, true);
  EXPECT_EQ(embedded.reserved, remote.reserved + 8);
  EXPECT_NE(embedded.explanation.find("the embedded broker (8)"), std::string::npos);
}

TEST(DescriptorBudget, NoGatewayNoPlan) {
  auto config = config::parse_config(R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
                                     "svc.toml")
                    .value();
  const auto budget = plan_descriptors(1024, config, kHealthConnections, false);
  EXPECT_TRUE(budget.gateways.empty());
  EXPECT_EQ(budget.explanation, "");
}

TEST(DescriptorBudget, TheLimitIsTheProcesssSoftLimit) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_cur != RLIM_INFINITY) {
    EXPECT_EQ(descriptor_limit(), limit.rlim_cur);
  }
}

}  // namespace
}  // namespace natsfleet::daemon
