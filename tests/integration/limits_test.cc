// Numbers out of range and threads the system refuses: the library answers with an error in
// words, never a crash.
#include <gtest/gtest.h>

#include "natsfleet/fleet.h"
#include "support/address_limit.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"

namespace natsfleet {
namespace {

using namespace std::chrono_literals;
using testing::fast_options;
using testing::fast_work;
using testing::NatsServer;

TEST(Limits, OutOfRangeSpecsAreRefusedByAddWork) {
  Fleet fleet(fast_options({"nats://127.0.0.1:1"}, "limits"));
  WorkSpec huge = fast_work("huge", "jobs.huge");
  huge.flow.concurrency = 200000;
  huge.flow.max_ack_pending = 200000;
  auto added = fleet.add_work(huge, [](const Message&) { return Disposition::ack(); });
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().code, Errc::invalid_argument);
  EXPECT_NE(added.error().describe().find("concurrency must be between 1 and 1024"),
            std::string::npos)
      << added.error().describe();

  WorkSpec forever = fast_work("forever", "jobs.forever");
  forever.flow.ack_wait = std::chrono::hours(9999999999LL);
  added = fleet.add_work(forever, [](const Message&) { return Disposition::ack(); });
  ASSERT_FALSE(added);
  EXPECT_NE(added.error().describe().find("ack_wait must be at most 24h"), std::string::npos)
      << added.error().describe();

  BroadcastSpec flood{.name = "flood", .subject = "flood.*"};
  flood.max_queued = 2'000'000;
  auto broadcast = fleet.add_broadcast(flood, [](const Message&) {});
  ASSERT_FALSE(broadcast);
  EXPECT_NE(broadcast.error().describe().find("max_queued must be between 1 and 1000000"),
            std::string::npos)
      << broadcast.error().describe();
}

// 1024 handler threads are within range, but a process allowed little memory cannot start them:
// start() says so, and the process lives on to report it (it used to abort with a
// std::system_error escaping).
TEST(Limits, ThreadsTheSystemRefusesMakeStartFailInWords) {
  if (!testing::kAddressLimitWorks) GTEST_SKIP() << "not under the sanitizers";
  NatsServer server;
  const std::string url = server.url();
  const int code = testing::run_with_few_threads([&] {
    Fleet fleet(fast_options({url}, "limits"));
    WorkSpec wide = fast_work("wide", "jobs.wide");
    wide.flow.concurrency = 1024;
    wide.flow.max_ack_pending = 1024;
    if (!fleet.add_work(wide, [](const Message&) { return Disposition::ack(); })) return 3;
    auto started = fleet.start();
    if (started) return 1;
    const std::string why = started.error().describe();
    std::fprintf(stderr, "start: %s\n", why.c_str());
    if (started.error().code != Errc::no_resources) return 2;
    if (why.find("cannot start work wide") == std::string::npos) return 2;
    fleet.shutdown(1s);
    return 0;
  });
  EXPECT_EQ(code, 0) << "1: started anyway; 2: another error; 134: it aborted";
}

}  // namespace
}  // namespace natsfleet
