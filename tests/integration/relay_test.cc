// The relay on a real broker: a status published once by whichever replica handled the work
// reaches every session of that member on every replica, and nobody else's; attach works during
// an outage; a broker restart loses no status; a repeated publish is delivered once.
#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

#include "natsfleet/fleet.h"
#include "natsfleet/relay.h"
#include "support/broker_client.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"
#include "support/relay_replica.h"

namespace natsfleet::testing {
namespace {

// A browser, as the relay sees it: what it was sent.
class FakeSession final : public RelaySession {
 public:
  bool deliver(std::shared_ptr<const std::string> payload) override {
    std::lock_guard lock(mu_);
    got_.push_back(*payload);
    return true;
  }
  bool closed() const override { return false; }
  std::vector<std::string> got() const {
    std::lock_guard lock(mu_);
    return got_;
  }
  size_t count() const { return got().size(); }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> got_;
};

struct Replica : RelayReplica {
  using RelayReplica::RelayReplica;

  std::shared_ptr<FakeSession> attach(const std::string& member) {
    auto session = std::make_shared<FakeSession>();
    auto id = relay.attach(member, session);
    EXPECT_TRUE(id) << id.error().describe();
    return session;
  }
};

bool wait_ready(std::initializer_list<Replica*> replicas) {
  return wait_for(
      [&] {
        for (auto* r : replicas)
          if (!r->fleet.health().ready) return false;
        return true;
      },
      10s);
}

// Publishes until the stream has stored it, as a work handler would by nak and redelivery.
void publish_until_stored(Relay& relay, const std::string& key, const std::string& payload,
                          const std::string& msg_id, uint64_t event = 0) {
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (!relay.publish(key, payload, msg_id, event)) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "never stored: " << payload;
    std::this_thread::sleep_for(50ms);
  }
}

TEST(Relay, AStatusReachesEverySessionOfItsMemberOnEveryReplicaAndNoOtherMember) {
  NatsServer server;
  Replica a(server.url(), "replica-a");
  Replica b(server.url(), "replica-b");
  ASSERT_TRUE(a.fleet.start());
  ASSERT_TRUE(b.fleet.start());
  auto alice_on_a = a.attach("alice");
  auto alice_on_b = b.attach("alice");
  auto alice_again_on_b = b.attach("alice");
  auto bob_on_b = b.attach("bob");
  ASSERT_TRUE(wait_ready({&a, &b}));

  ASSERT_TRUE(a.relay.publish("alice", R"({"state":"synced","n":1})", "work-1"));
  ASSERT_TRUE(b.relay.publish("alice", R"({"state":"synced","n":2})", "work-2"));
  ASSERT_TRUE(b.relay.publish("bob", R"({"state":"failed"})", "work-3"));
  for (const auto& session : {alice_on_a, alice_on_b, alice_again_on_b})
    ASSERT_TRUE(wait_for([&] { return session->count() == 2; }, 10s)) << session->count();
  ASSERT_TRUE(wait_for([&] { return bob_on_b->count() == 1; }, 10s));
  // One more status each, alice's last: whatever else were to reach a session, or replica a,
  // would have come before it.
  ASSERT_TRUE(a.relay.publish("bob", "last", "work-4"));
  ASSERT_TRUE(a.relay.publish("alice", "last", "work-5"));
  for (const auto& session : {alice_on_a, alice_on_b, alice_again_on_b, bob_on_b})
    ASSERT_TRUE(wait_for([&] { return session->got().back() == "last"; }, 10s));
  for (const auto& session : {alice_on_a, alice_on_b, alice_again_on_b})
    EXPECT_EQ(session->got(), (std::vector<std::string>{R"({"state":"synced","n":1})",
                                                        R"({"state":"synced","n":2})", "last"}));
  EXPECT_EQ(bob_on_b->got(), (std::vector<std::string>{R"({"state":"failed"})", "last"}));
  EXPECT_EQ(a.relay.stats().unrouted, 2u) << "bob has no session on replica a";
}

TEST(Relay, ARepeatedPublishIsDeliveredOnceWhateverTheSource) {
  NatsServer server;
  for (BroadcastSource source : {BroadcastSource::jetstream, BroadcastSource::core}) {
    RelayOptions options;
    options.source = source;
    Replica a(server.url(), "replica-a", options);
    auto alice = a.attach("alice");
    ASSERT_TRUE(a.fleet.start());
    ASSERT_TRUE(wait_ready({&a}));
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.relay.publish("alice", "synced", "work-42"));
    ASSERT_TRUE(a.relay.publish("alice", "synced again", "work-43"));
    ASSERT_TRUE(wait_for([&] { return alice->count() == 2; }, 10s));
    // A repeat would have come before a later status.
    ASSERT_TRUE(a.relay.publish("alice", "last", "work-44"));
    ASSERT_TRUE(wait_for([&] { return alice->got().back() == "last"; }, 10s));
    EXPECT_EQ(alice->got(), (std::vector<std::string>{"synced", "synced again", "last"}));
  }
}

TEST(Relay, AnAttachDuringABrokerOutageSucceedsOnceTheBrokerIsBack) {
  NatsServer server;
  server.stop();
  Replica a(server.url(), "replica-a");
  ASSERT_TRUE(a.fleet.start());  // never blocks on the broker
  auto alice = a.attach("alice");
  EXPECT_TRUE(a.relay.stats().subscribed);
  EXPECT_FALSE(a.fleet.health().ready);

  server.restart();
  ASSERT_TRUE(wait_ready({&a}));
  Replica publisher(server.url(), "publisher");
  ASSERT_TRUE(publisher.fleet.start());
  publish_until_stored(publisher.relay, "alice", "synced", "work-1");
  EXPECT_TRUE(wait_for([&] { return alice->count() == 1; }, 10s));
}

TEST(Relay, StatusesPublishedAcrossABrokerRestartAreAllDeliveredExactlyOnce) {
  NatsServer server;
  Replica a(server.url(), "replica-a");
  Replica b(server.url(), "replica-b");
  ASSERT_TRUE(a.fleet.start());
  ASSERT_TRUE(b.fleet.start());
  auto alice = b.attach("alice");
  ASSERT_TRUE(wait_ready({&a, &b}));

  for (int i = 0; i < 10; ++i)
    publish_until_stored(a.relay, "alice", "s" + std::to_string(i), "w" + std::to_string(i));
  server.restart();
  for (int i = 10; i < 20; ++i)
    publish_until_stored(a.relay, "alice", "s" + std::to_string(i), "w" + std::to_string(i));

  ASSERT_TRUE(wait_for([&] { return alice->count() >= 20; }, 20s)) << alice->count();
  // A repeat would have come before a later status.
  publish_until_stored(a.relay, "alice", "s20", "w20");
  ASSERT_TRUE(wait_for([&] { return alice->got().back() == "s20"; }, 20s)) << alice->count();
  std::vector<std::string> expected;
  for (int i = 0; i <= 20; ++i) expected.push_back("s" + std::to_string(i));
  EXPECT_EQ(alice->got(), expected);
}

TEST(Relay, AReplicaThatSubscribesLaterStillHandsEachMemberTheirLastStatus) {
  NatsServer server;
  Replica a(server.url(), "replica-a");
  ASSERT_TRUE(a.fleet.start());
  auto alice_on_a = a.attach("alice");
  ASSERT_TRUE(wait_ready({&a}));
  ASSERT_TRUE(a.relay.publish("alice", "alice: syncing", "w1"));
  ASSERT_TRUE(a.relay.publish("alice", "alice: synced", "w2"));
  ASSERT_TRUE(a.relay.publish("bob", "bob: failed", "w3"));
  ASSERT_TRUE(wait_for([&] { return alice_on_a->count() == 2; }, 10s));

  // Replica b starts after those were published (a rolling deploy); its pages open later still.
  Replica b(server.url(), "replica-b");
  ASSERT_TRUE(b.fleet.start());
  ASSERT_TRUE(b.relay.ensure_subscribed());
  ASSERT_TRUE(wait_ready({&b}));
  ASSERT_TRUE(wait_for([&] { return b.relay.stats().received >= 2; }, 10s));
  auto alice_on_b = b.attach("alice");
  auto bob_on_b = b.attach("bob");
  EXPECT_EQ(alice_on_b->got(), std::vector<std::string>{"alice: synced"});
  EXPECT_EQ(bob_on_b->got(), std::vector<std::string>{"bob: failed"});
}

TEST(Relay, AReplicaThatSubscribesLaterStartsFromEachMembersNewestEventNotTheLastPublished) {
  NatsServer server;
  Replica a(server.url(), "replica-a");
  ASSERT_TRUE(a.fleet.start());
  ASSERT_TRUE(a.relay.ensure_subscribed());
  ASSERT_TRUE(wait_ready({&a}));
  // Event 20's status is published first; event 14's comes late (its work message was held by
  // a replica that died, and handled again after ack_wait), then bob's 7 and 9 in order.
  ASSERT_TRUE(a.relay.publish("alice", "alice: event 20", "w20", 20));
  ASSERT_TRUE(a.relay.publish("alice", "alice: event 14", "w14", 14));
  ASSERT_TRUE(a.relay.publish("alice", "alice: event 20 again", "w20-again", 20));
  ASSERT_TRUE(a.relay.publish("bob", "bob: event 7", "w7", 7));
  ASSERT_TRUE(a.relay.publish("bob", "bob: event 9", "w9", 9));
  EXPECT_EQ(a.relay.stats().superseded_at_publish, 2u);
  auto alice_last =
      a.fleet.last_stored("RELAY_SYNC_STATUS", "natsfleet.relay.sync-status.alice", 2s);
  ASSERT_TRUE(alice_last) << alice_last.error().describe();
  ASSERT_TRUE(alice_last->has_value());
  EXPECT_EQ((*alice_last)->data(), "alice: event 20");
  auto nobody = a.fleet.last_stored("RELAY_SYNC_STATUS", "natsfleet.relay.sync-status.carol", 2s);
  ASSERT_TRUE(nobody) << nobody.error().describe();
  EXPECT_FALSE(nobody->has_value());

  Replica b(server.url(), "replica-b");
  ASSERT_TRUE(b.fleet.start());
  ASSERT_TRUE(b.relay.ensure_subscribed());
  ASSERT_TRUE(wait_ready({&b}));
  ASSERT_TRUE(wait_for([&] { return b.relay.stats().received >= 2; }, 10s));
  EXPECT_EQ(b.attach("alice")->got(), std::vector<std::string>{"alice: event 20"});
  EXPECT_EQ(b.attach("bob")->got(), std::vector<std::string>{"bob: event 9"});
}

TEST(Relay, ReplicasPublishingOneMembersEventsAtOnceLeaveTheNewestStored) {
  NatsServer server;
  Replica a(server.url(), "replica-a");
  Replica b(server.url(), "replica-b");
  ASSERT_TRUE(a.fleet.start());
  ASSERT_TRUE(b.fleet.start());
  ASSERT_TRUE(a.relay.ensure_subscribed());
  ASSERT_TRUE(wait_ready({&a, &b}));
  // Two replicas race: a publishes the odd events, b the even ones, each in its own order, so
  // reads and conditional stores interleave.
  constexpr uint64_t kEvents = 200;
  auto publish_every_other = [&](Replica& r, uint64_t first) {
    for (uint64_t e = first; e <= kEvents; e += 2)
      publish_until_stored(r.relay, "alice", "event " + std::to_string(e), "w" + std::to_string(e),
                           e);
  };
  std::thread odd([&] { publish_every_other(a, 1); });
  publish_every_other(b, 2);
  odd.join();
  auto last = a.fleet.last_stored("RELAY_SYNC_STATUS", "natsfleet.relay.sync-status.alice", 2s);
  ASSERT_TRUE(last && last->has_value());
  EXPECT_EQ((*last)->data(), "event 200");
  // The stream holds the key's statuses in increasing event order.
  auto alice = a.attach("alice");
  ASSERT_TRUE(
      wait_for([&] { return !alice->got().empty() && alice->got().back() == "event 200"; }, 10s));
  EXPECT_EQ(a.relay.stats().superseded, 0u) << "a stored status went back to an older event";
}

TEST(Relay, KeysThatCannotBeASubjectTokenAreRefused) {
  NatsServer server;
  Replica a(server.url(), "replica-a");
  for (const char* bad : {"", "a.b", "a*", ">", "a b"}) {
    EXPECT_FALSE(a.relay.attach(bad, std::make_shared<FakeSession>())) << bad;
    EXPECT_FALSE(a.relay.publish(bad, "x", "id")) << bad;
  }
  EXPECT_TRUE(check_relay_key("member-42_x@example:com").ok());
}

}  // namespace
}  // namespace natsfleet::testing
