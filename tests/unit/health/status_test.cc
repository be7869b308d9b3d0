#include "health/status.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "health_fixtures.h"

namespace natsfleet::health {
namespace {

using nlohmann::json;

TEST(RenderStatus, CarriesEveryField) {
  FleetHealth h = testing::two_subscriptions();
  const json doc = json::parse(render_status(h, "mailer"));
  EXPECT_EQ(doc["service"], "mailer");
  EXPECT_EQ(doc["live"], true);
  EXPECT_EQ(doc["ready"], false);
  EXPECT_EQ(doc["connected"], true);
  EXPECT_EQ(doc["reconnects"], 6);
  EXPECT_EQ(doc["fatal_reason"], "");
  ASSERT_EQ(doc["subscriptions"].size(), 2u);

  const json& work = doc["subscriptions"][0];
  EXPECT_EQ(work["name"], "mail-relay");
  EXPECT_EQ(work["kind"], "work");
  EXPECT_EQ(work["subject"], "mail.outgoing");
  EXPECT_EQ(work["stream"], "MAIL");
  EXPECT_EQ(work["consumer"], "mail-relay");
  EXPECT_EQ(work["state"], "bound");
  EXPECT_EQ(work["last_error"], "");
  EXPECT_EQ(work["consumer_pending"], 42);
  EXPECT_EQ(work["consumer_ack_pending"], 7);
  EXPECT_EQ(work["ack_floor"], 99991);
  const json expected_counters = {{"received", 1017}, {"acked", 1001},     {"naked", 11},
                                  {"termed", 3},      {"redelivered", 13}, {"handler_errors", 5},
                                  {"recoveries", 2},  {"retried", 0},      {"dead_lettered", 0},
                                  {"dropped", 0},     {"kept_alive", 0}};
  EXPECT_EQ(work["counters"], expected_counters);

  const json& broadcast = doc["subscriptions"][1];
  EXPECT_EQ(broadcast["name"], "status");
  EXPECT_EQ(broadcast["kind"], "broadcast");
  EXPECT_EQ(broadcast["state"], "recovering");
  EXPECT_EQ(broadcast["last_error"], "missed idle heartbeats");
  EXPECT_EQ(broadcast["counters"]["recoveries"], 4);

  // Exactly the documented keys, nothing more, nothing less.
  std::vector<std::string> keys;
  for (const auto& [key, value] : work.items()) keys.push_back(key);
  const std::vector<std::string> documented = {"ack_floor",
                                               "consumer",
                                               "consumer_ack_pending",
                                               "consumer_pending",
                                               "counters",
                                               "downstream",
                                               "kind",
                                               "last_error",
                                               "name",
                                               "state",
                                               "stream",
                                               "subject"};
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, documented);
}

TEST(RenderStatus, FatalReasonAndLargeCounters) {
  FleetHealth h;
  h.live = false;
  h.fatal_reason = "mail-relay: stream MAIL was deleted";
  SubscriptionHealth s = testing::busy_work();
  s.state = SubscriptionState::fatal;
  s.ack_floor = UINT64_MAX;
  h.subscriptions = {s};
  const json doc = json::parse(render_status(h, "mailer"));
  EXPECT_EQ(doc["live"], false);
  EXPECT_EQ(doc["fatal_reason"], "mail-relay: stream MAIL was deleted");
  EXPECT_EQ(doc["subscriptions"][0]["state"], "fatal");
  EXPECT_EQ(doc["subscriptions"][0]["ack_floor"].get<uint64_t>(), UINT64_MAX);
}

TEST(RenderStatus, InvalidUtf8DoesNotThrow) {
  FleetHealth h;
  SubscriptionHealth s = testing::busy_work();
  s.last_error = std::string("bad \xff\xfe bytes");
  h.subscriptions = {s};
  std::string text;
  ASSERT_NO_THROW(text = render_status(h, "mailer"));
  const json doc = json::parse(text);
  EXPECT_EQ(doc["subscriptions"][0]["last_error"], "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes");
}

}  // namespace
}  // namespace natsfleet::health

namespace natsfleet::health {
namespace {

TEST(RenderStatus, OrderedWorkShowsItsPartitions) {
  FleetHealth h = testing::two_subscriptions();
  EXPECT_FALSE(
      nlohmann::json::parse(render_status(h, "mailer"))["subscriptions"][0].contains("partitions"));
  h.subscriptions[0].partitions = 16;
  h.subscriptions[0].partitions_owned = {3, 9};
  h.subscriptions[0].leases_taken = 4;
  h.subscriptions[0].leases_lost = 1;
  h.subscriptions[0].rewinds = 2;
  const auto doc = nlohmann::json::parse(render_status(h, "mailer"));
  const nlohmann::json expected = {
      {"count", 16}, {"owned", {3, 9}}, {"leases_taken", 4}, {"leases_lost", 1}, {"rewinds", 2}};
  EXPECT_EQ(doc["subscriptions"][0]["partitions"], expected);
}

}  // namespace
}  // namespace natsfleet::health
