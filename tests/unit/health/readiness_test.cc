#include "health/readiness.h"

#include <gtest/gtest.h>

#include "health_fixtures.h"

namespace natsfleet::health {
namespace {

FleetHealth all_bound() {
  FleetHealth h = testing::two_subscriptions();
  for (auto& s : h.subscriptions) {
    s.state = SubscriptionState::bound;
    s.last_error.clear();
  }
  h.ready = true;
  return h;
}

TEST(Readiness, ReadyWhenConnectedAndEverythingBound) {
  const auto v = readiness(all_bound());
  EXPECT_TRUE(v.ready);
  EXPECT_EQ(v.reason, "");
}

TEST(Readiness, NotConnected) {
  FleetHealth h = all_bound();
  h.connected = false;
  h.ready = false;
  const auto v = readiness(h);
  EXPECT_FALSE(v.ready);
  EXPECT_EQ(v.reason, "not connected to the broker");
}

TEST(Readiness, NamesTheRecoveringSubscriptionAndWhy) {
  FleetHealth h = all_bound();
  h.ready = false;
  h.subscriptions[0].state = SubscriptionState::recovering;
  h.subscriptions[0].last_error = "missed idle heartbeats";
  const auto v = readiness(h);
  EXPECT_FALSE(v.ready);
  EXPECT_EQ(v.reason, "work mail-relay is recovering: missed idle heartbeats");
}

TEST(Readiness, StalledIsNotReady) {
  FleetHealth h = all_bound();
  h.subscriptions[0].state = SubscriptionState::stalled;
  const auto v = readiness(h);
  EXPECT_FALSE(v.ready);
  EXPECT_EQ(v.reason, "work mail-relay is stalled");
}

TEST(Readiness, ListsEveryReasonFatalFirst) {
  FleetHealth h = testing::two_subscriptions();
  h.live = false;
  h.connected = false;
  h.fatal_reason = "mail-relay: stream MAIL was deleted";
  h.subscriptions[0].state = SubscriptionState::fatal;
  h.subscriptions[0].last_error = "stream MAIL was deleted";
  const auto v = readiness(h);
  EXPECT_FALSE(v.ready);
  EXPECT_EQ(v.reason,
            "fatal: mail-relay: stream MAIL was deleted; not connected to the broker; "
            "work mail-relay is fatal: stream MAIL was deleted; "
            "broadcast status is recovering: missed idle heartbeats");
}

TEST(Readiness, FatalWithoutReason) {
  FleetHealth h = all_bound();
  h.live = false;
  h.ready = false;
  EXPECT_EQ(readiness(h).reason, "fatal");
}

TEST(Readiness, TrustsTheFleetFlagWhenItSaysNotReady) {
  FleetHealth h = all_bound();
  h.ready = false;
  const auto v = readiness(h);
  EXPECT_FALSE(v.ready);
  EXPECT_EQ(v.reason, "the fleet reports not ready");
}

TEST(Readiness, BindingBeforeFirstBind) {
  FleetHealth h;
  h.connected = true;
  SubscriptionHealth s;
  s.name = "mail-relay";
  s.kind = "work";
  h.subscriptions = {s};
  EXPECT_EQ(readiness(h).reason, "work mail-relay is binding");
}

}  // namespace
}  // namespace natsfleet::health
