#include "fleet/broker_watch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "support/nats_server.h"
#include "support/ring_log.h"
#include "support/wait_for.h"

namespace natsfleet::fleet {
namespace {

using namespace std::chrono_literals;
using testing::wait_for;

struct Watched {
  testing::RingLog ring;
  spdlog::logger& log = ring.log();
  std::string url = "nats://127.0.0.1:" + std::to_string(testing::free_loopback_port());
  size_t lines_with(const std::string& text) const { return ring.lines_with(text); }
};

TEST(BrokerWatch, WarningsComeAtDoublingIntervalsUpToTheLongest) {
  const BrokerWatch::Options o{.first = 5s, .longest = 60s};
  EXPECT_EQ(BrokerWatch::interval(o, 0), 5s);
  EXPECT_EQ(BrokerWatch::interval(o, 1), 10s);
  EXPECT_EQ(BrokerWatch::interval(o, 3), 40s);
  EXPECT_EQ(BrokerWatch::interval(o, 4), 60s);
  EXPECT_EQ(BrokerWatch::interval(o, 40), 60s);
}

TEST(BrokerWatch, NamesTheCauseAtOnceWarnsWhileItLastsAndSaysWhenTheBrokerIsBack) {
  Watched w;
  BrokerWatch watch(
      {.servers = {w.url}, .probe_timeout = 1s, .first = 300ms, .longest = 300ms},
      [] { return std::string("Authorization Violation"); }, w.log);
  ASSERT_TRUE(wait_for([&] { return !watch.cause().empty(); }, 5s));
  EXPECT_EQ(watch.cause(), w.url +
                               ": Connection refused (the client's last error: "
                               "Authorization Violation)");
  EXPECT_EQ(w.lines_with("no broker for"), 0u) << "no warning before `first`";
  ASSERT_TRUE(wait_for([&] { return w.lines_with("no broker for") >= 2; }, 10s));
  EXPECT_EQ(
      w.lines_with(
          "Connection refused (the client's last error: Authorization Violation); still trying"),
      w.lines_with("no broker for"));
  watch.connected();
  EXPECT_TRUE(watch.cause().empty());
  EXPECT_EQ(w.lines_with("the broker answers again after"), 1u);
  // A new outage is looked at afresh.
  watch.disconnected();
  ASSERT_TRUE(wait_for([&] { return !watch.cause().empty(); }, 5s));
}

TEST(BrokerWatch, AShortDisconnectIsNeitherWarnedOfNorSaidToBeOver) {
  Watched w;
  BrokerWatch watch({.servers = {w.url}, .probe_timeout = 1s, .first = 10s}, {}, w.log);
  watch.connected();
  watch.disconnected();
  watch.connected();
  watch.stop();
  EXPECT_TRUE(watch.cause().empty());
  EXPECT_EQ(w.ring.lines(), 0u);
}

TEST(BrokerWatch, ANameThatDoesNotResolveIsNamed) {
  Watched w;
  BrokerWatch watch(
      {.servers = {"nats://user:secret@no-such-host.invalid:4222"}, .probe_timeout = 1s}, {},
      w.log);
  ASSERT_TRUE(wait_for([&] { return !watch.cause().empty(); }, 10s));
  EXPECT_NE(watch.cause().find("cannot resolve no-such-host.invalid"), std::string::npos)
      << watch.cause();
  EXPECT_EQ(watch.cause().find("secret"), std::string::npos) << "credentials are redacted";
}

}  // namespace
}  // namespace natsfleet::fleet
