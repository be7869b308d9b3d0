// What per-key ordered work needs of the broker (docs/tutorial/library.md, "Ordered work"): the
// partition mapping, its probe, the fatal report that names a missing mapping, and the audit.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "config/daemon_config.h"
#include "fleet/ordered/partition_plan.h"
#include "fleet/ordered/partition_probe.h"
#include "support/broker_client.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"
#include "support/wait_for.h"

namespace natsfleet {
namespace {

using namespace std::chrono_literals;
using testing::BrokerClient;
using testing::NatsServer;
using testing::wait_for;

TEST(PartitionMapping, TheBrokerPartitionsAsThePlanSays) {
  auto plan = fleet::PartitionPlan::make("orders.*", 2, 16).value();
  NatsServer server({.extra_config = plan.mappings_block()});
  BrokerClient admin(server.url());
  admin.create_stream("ORDERS", {plan.stored_subjects()});
  for (int k = 0; k < 200; ++k) {
    const std::string published = "orders.k" + std::to_string(k);
    const uint64_t seq = admin.publish(published, "x");
    auto stored = admin.api().get_message("ORDERS", seq);
    ASSERT_TRUE(stored);
    EXPECT_EQ(stored->subject, plan.mapped(published));
  }
}

TEST(PartitionMapping, TheProbeFindsTheMappingAndStoresNothing) {
  auto plan = fleet::PartitionPlan::make("orders.*", 2, 16).value();
  NatsServer server({.extra_config = plan.mappings_block()});
  BrokerClient admin(server.url());
  admin.create_stream("ORDERS", {plan.stored_subjects()});
  auto probed = fleet::probe_partition_mapping(admin.connection(), plan, 5s);
  EXPECT_TRUE(probed) << probed.error().describe();
  admin.publish("orders.after", "x");  // the probe went before: sequence 1 if it stored nothing
  EXPECT_EQ(admin.api().stream_info("ORDERS")->messages, 1u);
}

TEST(PartitionMapping, TheProbeNamesAMissingOrDifferentMapping) {
  auto plan = fleet::PartitionPlan::make("orders.*", 2, 16).value();
  {
    NatsServer bare;
    BrokerClient admin(bare.url());
    admin.create_stream("ORDERS", {plan.stored_subjects()});
    auto probed = fleet::probe_partition_mapping(admin.connection(), plan, 5s);
    ASSERT_FALSE(probed);
    EXPECT_EQ(probed.error().code, Errc::invalid_argument);
    EXPECT_EQ(probed.error().message, "the broker has no subject mapping for orders.*");
  }
  auto eight = fleet::PartitionPlan::make("orders.*", 2, 8).value();
  NatsServer other({.extra_config = eight.mappings_block()});
  BrokerClient admin(other.url());
  auto probed = fleet::probe_partition_mapping(admin.connection(), plan, 5s);
  ASSERT_FALSE(probed);
  EXPECT_NE(probed.error().message.find("another partition count"), std::string::npos)
      << probed.error().message;
}

TEST(OrderedWork, AFleetWithoutTheMappingReportsFatalWithTheMappingToAdd) {
  NatsServer bare;
  BrokerClient admin(bare.url());
  admin.create_stream("ORDERS", {"orders.>"});
  Fleet fleet(testing::fast_options({bare.url()}, "ordered"));
  auto spec = testing::fast_work("orders", "orders.*");
  spec.per_key.emplace();
  spec.per_key->key_token = 2;
  std::mutex mu;
  std::string reason;
  fleet.on_fatal([&](const FatalReport& report) {
    std::lock_guard lock(mu);
    reason = report.reason;
  });
  ASSERT_TRUE(fleet.add_work(spec, [](const Message&) { return Disposition::ack(); }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return !fleet.health().live; }, 15s));
  std::lock_guard lock(mu);
  EXPECT_NE(reason.find("\"orders.*\": \"orders.{{wildcard(1)}}.{{partition(16,1)}}\""),
            std::string::npos)
      << reason;
}

config::DaemonConfig ordered_config(const std::string& url) {
  return config::parse_config("name = \"svc\"\nservers = [\"" + url +
                                  "\"]\n[[work]]\nname = \"orders\"\nsubject = \"orders.*\"\n"
                                  "ordering = \"per-key\"\nkey_token = 2\nheartbeat = \"250ms\"\n"
                                  "sink = { type = \"stdout\" }\n",
                              "svc.toml")
      .value();
}

std::vector<std::string> rules_of(const audit::AuditReport& report, const std::string& work) {
  std::vector<std::string> rules;
  for (const auto& f : report.findings)
    if (f.consumer == work) rules.push_back(f.finding);
  return rules;
}

TEST(OrderedWorkAudit, NamesAMissingMappingAndStream) {
  NatsServer bare;
  auto report = audit::run_audit(
      {.servers = {bare.url()}, .interval = 100ms, .config = ordered_config(bare.url())});
  ASSERT_TRUE(report) << report.error().describe();
  const auto rules = rules_of(*report, "orders");
  EXPECT_EQ(rules, (std::vector<std::string>{"work-no-stream", "partition-mapping"}));
  for (const auto& f : report->findings) {
    if (f.finding != "partition-mapping") continue;
    EXPECT_NE(f.action.find("\"orders.*\": \"orders.{{wildcard(1)}}.{{partition(16,1)}}\""),
              std::string::npos)
        << f.action;
  }
}

TEST(OrderedWorkAudit, FindsNothingWrongWithARunningOrderedWork) {
  auto plan = fleet::PartitionPlan::make("orders.*", 2, 16).value();
  NatsServer server({.extra_config = plan.mappings_block()});
  BrokerClient admin(server.url());
  admin.create_stream("ORDERS", {plan.stored_subjects()});
  Fleet fleet(testing::fast_options({server.url()}, "ordered"));
  auto spec = testing::fast_work("orders", "orders.*");
  spec.per_key.emplace();
  spec.per_key->key_token = 2;
  ASSERT_TRUE(fleet.add_work(spec, [](const Message&) { return Disposition::ack(); }));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for(
      [&] {
        const auto h = fleet.health();
        return h.ready && h.subscriptions.at(0).partitions_owned.size() == 16;
      },
      20s));
  auto report = audit::run_audit(
      {.servers = {server.url()}, .interval = 100ms, .config = ordered_config(server.url())});
  ASSERT_TRUE(report) << report.error().describe();
  EXPECT_TRUE(rules_of(*report, "orders").empty());
  for (const auto& f : report->findings) {
    ADD_FAILURE() << f.consumer << ": " << f.finding;
  }
  fleet.shutdown(5s);
}

}  // namespace
}  // namespace natsfleet
