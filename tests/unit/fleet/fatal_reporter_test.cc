#include "fleet/fatal_reporter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/ring_log.h"
#include "support/wait_for.h"

namespace natsfleet::fleet {
namespace {

using namespace std::chrono_literals;
using testing::wait_for;

struct Logged {
  testing::RingLog ring;
  spdlog::logger& log = ring.log();
  bool has(const std::string& text) const { return ring.lines_with(text) > 0; }
};

struct Handed {
  std::mutex mu;
  std::vector<FatalReport> reports;
  FatalHandler handler() {
    return [this](const FatalReport& r) {
      std::lock_guard lock(mu);
      reports.push_back(r);
    };
  }
  size_t count() {
    std::lock_guard lock(mu);
    return reports.size();
  }
};

// A started reporter whose handler records what it is handed.
struct Reporting {
  Reporting() {
    reporter.on_fatal(handed.handler());
    reporter.start();
  }
  Logged logged;
  Handed handed;
  FatalReporter reporter{logged.log};
};

TEST(FatalReporter, TheFirstReportIsKeptLoggedAndHandedOnce) {
  Reporting r;
  auto& [logged, handed, reporter] = r;
  reporter.open();
  reporter.report("orders", "consumer deleted");
  reporter.report("", "connection closed");
  ASSERT_TRUE(wait_for([&] { return handed.count() == 1; }, 5s));
  reporter.stop();  // the thread has ended: nothing more can be handed
  EXPECT_EQ(handed.count(), 1u);
  EXPECT_EQ(handed.reports[0].subscription, "orders");
  EXPECT_EQ(handed.reports[0].reason, "consumer deleted");
  EXPECT_EQ(reporter.reason(), "orders: consumer deleted");
  EXPECT_TRUE(logged.has("fatal: orders: consumer deleted"));
  EXPECT_FALSE(logged.has("connection closed"));
}

TEST(FatalReporter, AReportBeforeOpenWaitsForItAndOneNeverOpenedIsNeverHanded) {
  {
    Reporting never;
    never.reporter.report("", "connection closed");
    EXPECT_EQ(never.reporter.reason(), "connection closed");
    never.reporter.stop();  // start() failed after all: the report is not handed
    EXPECT_EQ(never.handed.count(), 0u);
  }
  Reporting r;
  r.reporter.report("", "connection closed");
  r.reporter.open();
  ASSERT_TRUE(wait_for([&] { return r.handed.count() == 1; }, 5s));
}

TEST(FatalReporter, ShuttingDownDropsWhatIsPendingAndWhatComesLater) {
  Reporting r;
  auto& [logged, handed, reporter] = r;
  reporter.quiet();
  reporter.report("orders", "consumer deleted");
  EXPECT_EQ(reporter.reason(), "");
  reporter.open();
  reporter.stop();
  EXPECT_EQ(handed.count(), 0u);
}

TEST(FatalReporter, ForgetMakesTheFleetLiveAgain) {
  Logged logged;
  FatalReporter reporter(logged.log);
  reporter.report("", "connection closed");
  EXPECT_EQ(reporter.reason(), "connection closed");
  reporter.forget();
  EXPECT_EQ(reporter.reason(), "");
  reporter.report("", "second start failed too");
  EXPECT_EQ(reporter.reason(), "second start failed too");
}

TEST(FatalReporter, AHandlerThatThrowsIsLoggedAndTheProcessGoesOn) {
  Logged logged;
  FatalReporter reporter(logged.log);
  reporter.on_fatal([](const FatalReport&) { throw std::runtime_error("exit hook broke"); });
  reporter.start();
  reporter.open();
  reporter.report("", "connection closed");
  ASSERT_TRUE(wait_for([&] { return logged.has("fatal handler threw: exit hook broke"); }, 5s));
}

// The handler may free what owns the reporter (a fleet whose handler destroys it): the reporter
// is then destroyed on its own thread, which must neither join itself nor touch freed memory.
TEST(FatalReporter, AHandlerMayDestroyTheReporterItRunsOn) {
  Logged logged;
  auto* reporter = new FatalReporter(logged.log);
  std::atomic<bool> freed{false};
  reporter->on_fatal([&](const FatalReport&) {
    delete reporter;
    freed = true;
  });
  reporter->start();
  reporter->open();
  reporter->report("", "connection closed");
  ASSERT_TRUE(wait_for([&] { return freed.load(); }, 5s));
}

TEST(FatalReporter, AHandlerThrowingSomethingElseIsLoggedToo) {
  Logged logged;
  FatalReporter reporter(logged.log);
  reporter.on_fatal([](const FatalReport&) { throw 7; });
  reporter.start();
  reporter.open();
  reporter.report("", "connection closed");
  ASSERT_TRUE(wait_for([&] { return logged.has("not a std::exception"); }, 5s));
}

}  // namespace
}  // namespace natsfleet::fleet
