// WorkSpec::declared_stream on a real broker: an absent stream is created as declared (two
// replicas declaring it at once both bind), and an existing one is left as it is, each difference
// logged once as a warning, while the work runs on it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "natsfleet/fleet.h"
#include "support/broker_client.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"
#include "support/wait_for.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;

WorkSpec mailer() {
  auto spec = fast_work("mailer", "mail.send");
  spec.declared_stream = StreamSpec{.name = "MAIL",
                                    .subjects = {"mail.>"},
                                    .storage = StreamStorage::memory,
                                    .max_age = 1h,
                                    .max_msgs = 1000,
                                    .duplicate_window = 1min};
  return spec;
}

// The distinct payloads handled, across replicas.
struct Handled {
  std::mutex mu;
  std::set<std::string> seen;
  WorkHandler handler() {
    return [this](const Message& m) {
      std::lock_guard lock(mu);
      seen.insert(std::string(m.data()));
      return Disposition::ack();
    };
  }
  size_t count() {
    std::lock_guard lock(mu);
    return seen.size();
  }
};

TEST(DeclaredStream, AnAbsentStreamIsCreatedAsDeclaredWhileTwoReplicasBindAtOnce) {
  NatsServer server;
  BrokerClient admin(server.url());
  Handled handled;
  Fleet a(fast_options({server.url()}, "a"));
  Fleet b(fast_options({server.url()}, "b"));
  ASSERT_TRUE(a.add_work(mailer(), handled.handler()));
  ASSERT_TRUE(b.add_work(mailer(), handled.handler()));
  ASSERT_TRUE(a.start());
  ASSERT_TRUE(b.start());
  ASSERT_TRUE(wait_for([&] { return a.health().ready && b.health().ready; }, 15s))
      << a.health().subscriptions.at(0).last_error << " / "
      << b.health().subscriptions.at(0).last_error;

  auto info = admin.api().stream_info("MAIL");
  ASSERT_TRUE(info) << info.error().describe();
  EXPECT_EQ(info->config.subjects, std::vector<std::string>{"mail.>"});
  EXPECT_EQ(info->config.storage, nats::StorageType::memory);
  EXPECT_EQ(info->config.max_age, 1h);
  EXPECT_EQ(info->config.max_msgs, 1000);
  EXPECT_EQ(info->config.duplicate_window, 1min);

  admin.publish_many("mail.send", 50, "mail-");
  EXPECT_TRUE(wait_for([&] { return handled.count() == 50; }, 10s)) << handled.count();
}

TEST(DeclaredStream, AnExistingStreamIsLeftAsItIsAndEachDifferenceSaidOnce) {
  NatsServer server;
  BrokerClient admin(server.url());
  admin.create_stream("MAIL", {"mail.>"});
  std::mutex mu;
  std::vector<std::string> differs;
  auto options = fast_options({server.url()}, "a");
  options.log_to = [&](const LogLine& line) {
    for (const auto& [key, value] : line.fields)
      if (key == "event" && value == "stream-differs") {
        EXPECT_EQ(line.level, LogLevel::warn);
        std::lock_guard lock(mu);
        differs.emplace_back(line.message);
      }
  };
  Handled handled;
  Fleet fleet(options);
  ASSERT_TRUE(fleet.add_work(mailer(), handled.handler()));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().ready; }, 10s));
  admin.publish_many("mail.send", 20, "mail-");
  EXPECT_TRUE(wait_for([&] { return handled.count() == 20; }, 10s)) << handled.count();

  auto info = admin.api().stream_info("MAIL");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->config.storage, nats::StorageType::file) << "never changed";
  EXPECT_EQ(info->config.max_age, 0ns);
  EXPECT_EQ(info->config.max_msgs, -1);
  std::lock_guard lock(mu);
  ASSERT_EQ(differs.size(), 1u);
  EXPECT_EQ(differs[0],
            "work mailer: stream MAIL differs from its declaration and is left as it is: "
            "storage: memory declared, file on the broker; max_age: 1h declared, none on the "
            "broker; max_msgs: 1000 declared, none on the broker; duplicate_window: 1m declared, "
            "2m on the broker");
}

}  // namespace
}  // namespace natsfleet::testing
