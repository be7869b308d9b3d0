#include "daemon/reload_plan.h"

#include <gtest/gtest.h>

#include <string>

namespace natsfleet::daemon {
namespace {

using Names = std::vector<std::string>;

config::DaemonConfig parse(const std::string& text) {
  return config::parse_config(text, "/etc/natsfleet/app.toml").value();
}

const std::string kBase = R"(name = "app"
servers = ["nats://127.0.0.1:4222"]
[[work]]
name = "mail"
subject = "mail.send"
sink = { type = "file", path = "mail.jsonl" }
[[work]]
name = "bills"
subject = "bills.due"
sink = { type = "file", path = "bills.jsonl" }
[[broadcast]]
name = "status"
subject = "status.>"
sink = { type = "stdout" }
)";

TEST(ReloadPlan, TheSameConfigWrittenDifferentlyChangesNothing) {
  const std::string relaid = R"(# the same, laid out anew
servers = [ "nats://127.0.0.1:4222" ]
name = "app"

[[work]]
subject = "mail.send"   # keys in another order
name = "mail"
sink = { path = "mail.jsonl", type = "file" }

[[work]]
name = "bills"
subject = "bills.due"
[work.sink]
type = "file"
path = "bills.jsonl"

[[broadcast]]
name = "status"
subject = "status.>"
sink = { type = "stdout" }
)";
  const auto plan = plan_reload(parse(kBase), parse(relaid));
  EXPECT_EQ(plan.stop, Names{});
  EXPECT_EQ(plan.start, Names{});
  EXPECT_EQ(plan.unchanged, 3u);
  EXPECT_EQ(plan.restart_only, Names{});
}

TEST(ReloadPlan, AChangedSubscriptionIsStoppedAndStartedAndTheOthersLeftAlone) {
  std::string next = kBase;
  next.replace(next.find("bills.jsonl"), 11, "bills2.jsonl");
  const auto plan = plan_reload(parse(kBase), parse(next));
  EXPECT_EQ(plan.stop, Names{"bills"});
  EXPECT_EQ(plan.start, Names{"bills"});
  EXPECT_EQ(plan.unchanged, 2u);
}

TEST(ReloadPlan, RemovedOnesStopAddedOnesStartInTheNewConfigsOrder) {
  const std::string next = R"(name = "app"
servers = ["nats://127.0.0.1:4222"]
[[work]]
name = "refunds"
subject = "refunds.due"
sink = { type = "stdout" }
[[work]]
name = "mail"
subject = "mail.send"
sink = { type = "file", path = "mail.jsonl" }
[[broadcast]]
name = "bills"
subject = "bills.due"
sink = { type = "stdout" }
)";
  const auto plan = plan_reload(parse(kBase), parse(next));
  // "bills" moved from a work to a broadcast: stopped, then started as the broadcast.
  EXPECT_EQ(plan.stop, (Names{"bills", "status"}));
  EXPECT_EQ(plan.start, (Names{"refunds", "bills"}));
  EXPECT_EQ(plan.unchanged, 1u);
}

TEST(ReloadPlan, ConnectionHealthAndLogSettingsWaitForARestart) {
  const std::string next =
      "name = \"app2\"\n"
      "servers = [\"nats://10.0.0.1:4222\"]\n"
      "log_level = \"debug\"\n"
      "shutdown_timeout = \"3s\"\n"
      "[health]\n"
      "listen = \"0.0.0.0:9464\"\n" +
      kBase.substr(kBase.find("[[work]]"));
  const auto plan = plan_reload(parse(kBase), parse(next));
  EXPECT_EQ(plan.restart_only, (Names{"name", "servers", "health.listen", "log_level"}));
  // shutdown_timeout is applied by the reload itself; the subscriptions are untouched.
  EXPECT_EQ(plan.stop, Names{});
  EXPECT_EQ(plan.start, Names{});
  EXPECT_EQ(plan.unchanged, 3u);
}

}  // namespace
}  // namespace natsfleet::daemon
