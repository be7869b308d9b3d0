// Per-key ordered work on a real broker (docs/tutorial/library.md, "Ordered work"): key order with
// many messages in flight; through a killed replica, a
// joining one and a paused one (whose late write the fencing token lets a downstream refuse); on
// limits, interest and work-queue streams; a downstream that is down, a rejected message, a lost
// reader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "base/child_process.h"
#include "config/daemon_config.h"
#include "consume/ack_metadata.h"
#include "fleet/consumer_shape.h"
#include "fleet/ordered/partition_plan.h"
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

// One handled message as a replica process wrote it:
// "<monotonic ns> <stream seq> <key>:<n> [<partition> <epoch>]".
struct Handled {
  long long at = 0;
  uint64_t seq = 0;
  std::string key;
  int n = 0;
  uint64_t epoch = 0;  // of the owner that handled it (0: not written)
};

std::vector<Handled> read_handled(const std::vector<std::string>& files) {
  std::vector<Handled> all;
  for (const auto& f : files) {
    std::ifstream in(f);
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      Handled h;
      std::string data;
      if (!(fields >> h.at >> h.seq >> data)) continue;  // a line cut by SIGKILL
      const size_t colon = data.find(':');
      if (colon == std::string::npos) continue;
      h.key = data.substr(0, colon);
      h.n = std::stoi(data.substr(colon + 1));
      int partition = 0;
      if (!(fields >> partition >> h.epoch)) h.epoch = 0;
      all.push_back(h);
    }
  }
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.at < b.at; });
  return all;
}

// For every key, in handling order, within one owner's term (epoch): a message may repeat the
// latest one handled, never an older one. A new owner resumes after the partition's checkpoint,
// so across a change of owner a key may start again lower (a replay, which a fencing downstream
// ignores); downstream_state() checks where that leaves the key.
std::vector<std::string> order_violations(const std::vector<Handled>& handled) {
  std::map<std::pair<std::string, uint64_t>, int> latest;
  std::vector<std::string> violations;
  for (const auto& h : handled) {
    auto [it, fresh] = latest.emplace(std::pair(h.key, h.epoch), h.n);
    if (fresh) continue;
    if (h.n < it->second)
      violations.push_back(h.key + ": " + std::to_string(h.n) + " handled after " +
                           std::to_string(it->second));
    it->second = std::max(it->second, h.n);
  }
  return violations;
}

// The state a downstream ends with when it applies each write in arrival order: with `fenced`,
// a write whose stream sequence is not above the last one applied for its key is ignored
// (examples/fencing-sink); without, the last write wins.
std::map<std::string, int> downstream_state(const std::vector<Handled>& arrivals, bool fenced) {
  std::map<std::string, std::pair<uint64_t, int>> state;
  for (const auto& h : arrivals) {
    auto [it, fresh] = state.try_emplace(h.key, h.seq, h.n);
    if (fresh) continue;
    if (fenced && h.seq <= it->second.first) continue;
    it->second = {h.seq, h.n};
  }
  std::map<std::string, int> values;
  for (const auto& [k, v] : state) values[k] = v.second;
  return values;
}

TEST(OrderedWork, KeysStayInOrderThroughAKilledReplicaAndAJoiningOne) {
  auto plan = fleet::PartitionPlan::make("orders.*", 2, 16).value();
  NatsServer server({.extra_config = plan.mappings_block()});
  BrokerClient admin(server.url());
  admin.create_stream("ORDERS", {plan.stored_subjects()});
  std::vector<std::string> files;
  auto start_replica = [&](int i) {
    const std::string out =
        "/tmp/natsfleet-ordered-" + std::to_string(getpid()) + "-" + std::to_string(i);
    std::remove(out.c_str());
    files.push_back(out);
    auto child = base::ChildProcess::start(
        {NATSFLEET_REPLICA_BIN, "--server", server.url(), "--work", "orders", "--subject",
         "orders.*", "--out", out, "--ack-wait-ms", "2000", "--key-token", "2", "--handle-ms", "20",
         "--concurrency", "4", "--lease-ms", "2000"},
        {.search_path = false});
    EXPECT_TRUE(child) << child.error().describe();
    return std::move(child.value());
  };
  std::vector<base::ChildProcess> replicas;
  replicas.push_back(start_replica(0));
  replicas.push_back(start_replica(1));
  constexpr int kKeys = 100, kPerKey = 20, kTotal = kKeys * kPerKey;
  // Key k's messages "k<k>:<n>", n rising, interleaved across keys as they would be.
  auto publish_range = [&](int from, int to) {
    for (int n = from; n < to; ++n)
      for (int k = 0; k < kKeys; ++k)
        admin.publish("orders.k" + std::to_string(k),
                      "k" + std::to_string(k) + ":" + std::to_string(n));
  };
  auto distinct = [&] {
    std::set<uint64_t> seqs;
    for (const auto& h : read_handled(files)) seqs.insert(h.seq);
    return seqs.size();
  };
  auto lines_of = [&](int i) { return read_handled({files[static_cast<size_t>(i)]}).size(); };
  publish_range(0, kPerKey / 2);
  // Each handler takes 20 ms after writing its line: the replica that took the partitions first
  // (the other is handed some only after the settle time) is busy with a backlog, holding messages.
  int victim = -1;
  ASSERT_TRUE(wait_for(
      [&] {
        for (int i : {0, 1})
          if (lines_of(i) >= 50) victim = i;
        return victim >= 0;
      },
      30s));
  replicas[static_cast<size_t>(victim)].kill();  // SIGKILL, holding up to 4 partitions' messages
  replicas.push_back(start_replica(2));          // a replica joins
  publish_range(kPerKey / 2, kPerKey);
  ASSERT_TRUE(wait_for([&] { return distinct() == static_cast<size_t>(kTotal); }, 60s))
      << distinct() << " of " << kTotal << " handled";
  const auto handled = read_handled(files);
  // Not vacuous: some of what the victim held when it died was handled again elsewhere.
  std::set<uint64_t> by_victim;
  for (const auto& h : read_handled({files[static_cast<size_t>(victim)]})) by_victim.insert(h.seq);
  size_t taken_over = 0;
  for (int i : {0, 1, 2})
    if (i != victim)
      for (const auto& h : read_handled({files[static_cast<size_t>(i)]}))
        taken_over += by_victim.count(h.seq);
  EXPECT_GT(taken_over, 0u) << "the killed replica held nothing when it died";
  const auto violations = order_violations(handled);
  EXPECT_TRUE(violations.empty()) << violations.size() << " violations, first: " << violations[0];
  // A downstream that applies a key's writes in rising stream sequence ends on its last message.
  const auto fenced = downstream_state(handled, true);
  for (int k = 0; k < kKeys; ++k)
    EXPECT_EQ(fenced.at("k" + std::to_string(k)), kPerKey - 1) << "k" << k;
  for (size_t i = 0; i < replicas.size(); ++i)
    if (static_cast<int>(i) != victim) replicas[i].kill();
  for (const auto& f : files) std::remove(f.c_str());
}

// An ordered work in this process: what its handler saw, in order. `verdict` decides each
// message (ack when unset); `tweak` adjusts the spec.
class OrderedFleet {
 public:
  struct Seen {
    std::string data;
    uint64_t seq = 0;
    int partition = -1;
    uint64_t epoch = 0;
  };
  OrderedFleet(const std::string& url, std::function<Disposition(const Message&)> verdict = {},
               std::function<void(WorkSpec&)> tweak = {})
      : OrderedFleet(std::vector{url}, std::move(verdict), std::move(tweak)) {}
  OrderedFleet(const std::vector<std::string>& urls,
               std::function<Disposition(const Message&)> verdict = {},
               std::function<void(WorkSpec&)> tweak = {})
      : fleet_(testing::fast_options(urls, "ordered")), verdict_(std::move(verdict)) {
    auto spec = testing::fast_work("orders", "orders.*");
    spec.per_key.emplace();
    spec.per_key->key_token = 2;
    spec.per_key->lease = 2s;
    spec.flow.concurrency = 8;
    if (tweak) tweak(spec);
    EXPECT_TRUE(fleet_.add_work(spec, [this](const Message& m) {
      {
        std::lock_guard lock(mu_);
        seen_.push_back({m.data(), m.stream_seq(), m.fence() ? m.fence()->partition : -1,
                         m.fence() ? m.fence()->epoch : 0});
      }
      return verdict_ ? verdict_(m) : Disposition::ack();
    }));
    EXPECT_TRUE(fleet_.start());
  }
  ~OrderedFleet() { fleet_.shutdown(5s); }
  std::vector<Seen> seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }
  size_t count(const std::string& data) const {
    std::lock_guard lock(mu_);
    return static_cast<size_t>(
        std::count_if(seen_.begin(), seen_.end(), [&](const Seen& s) { return s.data == data; }));
  }
  SubscriptionHealth health() { return fleet_.health().subscriptions.at(0); }
  Fleet& fleet() { return fleet_; }

 private:
  Fleet fleet_;
  std::function<Disposition(const Message&)> verdict_;
  mutable std::mutex mu_;
  std::vector<Seen> seen_;
};

// "k<k>:<n>" on orders.k<k>, n from `from` to `to` - 1, interleaved across keys.
void publish_keys(BrokerClient& admin, int keys, int from, int to) {
  for (int n = from; n < to; ++n)
    for (int k = 0; k < keys; ++k)
      admin.publish("orders.k" + std::to_string(k),
                    "k" + std::to_string(k) + ":" + std::to_string(n));
}

// Per key, in the order seen: each n is the one after the last seen (a repeat of an earlier
// message after a later one of its key is a violation); an empty result is in order.
std::vector<std::string> out_of_order(const std::vector<OrderedFleet::Seen>& seen) {
  std::vector<Handled> handled;
  for (const auto& s : seen) {
    const size_t colon = s.data.find(':');
    handled.push_back({0, s.seq, s.data.substr(0, colon), std::stoi(s.data.substr(colon + 1))});
  }
  return order_violations(handled);
}

std::set<std::string> distinct(const std::vector<OrderedFleet::Seen>& seen) {
  std::set<std::string> data;
  for (const auto& s : seen) data.insert(s.data);
  return data;
}

struct OrderedBroker {
  fleet::PartitionPlan plan = fleet::PartitionPlan::make("orders.*", 2, 16).value();
  NatsServer server{{.extra_config = plan.mappings_block()}};
  BrokerClient admin{server.url()};
  OrderedBroker() { admin.create_stream("ORDERS", {plan.stored_subjects()}); }
};

TEST(OrderedWork, ManyKeysRunAtOnceEachInStreamOrderWithItsFencingToken) {
  OrderedBroker b;
  std::atomic<int> running{0}, most{0};
  OrderedFleet f(b.server.url(), [&](const Message&) {
    const int now = ++running;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(2ms);
    --running;
    return Disposition::ack();
  });
  publish_keys(b.admin, 50, 0, 20);
  ASSERT_TRUE(wait_for([&] { return f.seen().size() >= 1000; }, 60s)) << f.seen().size();
  const auto seen = f.seen();
  EXPECT_EQ(seen.size(), 1000u) << "each message once";
  EXPECT_EQ(distinct(seen).size(), 1000u);
  const auto violations = out_of_order(seen);
  EXPECT_TRUE(violations.empty()) << violations.front();
  EXPECT_GT(most.load(), 1) << "different keys run at once";
  for (const auto& s : seen) {
    EXPECT_EQ(s.partition, b.plan.partition_of(s.data.substr(0, s.data.find(':')))) << s.data;
    EXPECT_GT(s.epoch, 0u);
  }
  EXPECT_EQ(f.health().partitions_owned.size(), 16u);
}

TEST(OrderedWork, TwoReplicasEachOwnAShareAndHandleEachMessageOnce) {
  OrderedBroker b;
  OrderedFleet one(b.server.url());
  OrderedFleet two(b.server.url());
  ASSERT_TRUE(wait_for(
      [&] {
        return one.health().partitions_owned.size() + two.health().partitions_owned.size() == 16 &&
               !one.health().partitions_owned.empty() && !two.health().partitions_owned.empty();
      },
      30s))
      << one.health().partitions_owned.size() << " and " << two.health().partitions_owned.size();
  publish_keys(b.admin, 40, 0, 10);
  ASSERT_TRUE(wait_for([&] { return one.seen().size() + two.seen().size() >= 400; }, 60s));
  auto all = one.seen();
  const auto more = two.seen();
  all.insert(all.end(), more.begin(), more.end());
  EXPECT_EQ(all.size(), 400u);
  EXPECT_EQ(distinct(all).size(), 400u);
  EXPECT_TRUE(out_of_order(one.seen()).empty());
  EXPECT_TRUE(out_of_order(two.seen()).empty());
  std::set<int> owned;
  for (int p : one.health().partitions_owned) owned.insert(p);
  for (int p : two.health().partitions_owned) EXPECT_FALSE(owned.count(p)) << "both own " << p;
}

// Removed from a running fleet (a reload that drops or changes it), ordered work leaves its
// partitions released: the other replica takes them at once, not a lease later, and goes on
// with every message once, in order.
TEST(OrderedWork, RemovedFromARunningFleetItHandsItsPartitionsOverAtOnce) {
  OrderedBroker b;
  auto long_lease = [](WorkSpec& spec) { spec.per_key->lease = 30s; };
  OrderedFleet one(b.server.url(), {}, long_lease);
  ASSERT_TRUE(wait_for([&] { return one.health().partitions_owned.size() == 16; }, 30s));
  publish_keys(b.admin, 20, 0, 5);
  ASSERT_TRUE(wait_for([&] { return one.seen().size() >= 100; }, 30s));
  OrderedFleet two(b.server.url(), {}, long_lease);  // settles for two leases before a handover
  ASSERT_TRUE(wait_for([&] { return two.health().state == SubscriptionState::bound; }, 30s));
  EXPECT_TRUE(two.health().partitions_owned.empty());

  ASSERT_TRUE(one.fleet().remove("orders", 5s));
  EXPECT_TRUE(one.fleet().health().subscriptions.empty());
  ASSERT_TRUE(wait_for([&] { return two.health().partitions_owned.size() == 16; }, 15s))
      << two.health().partitions_owned.size() << " partitions taken within half a lease";
  publish_keys(b.admin, 20, 5, 10);
  ASSERT_TRUE(wait_for([&] { return two.seen().size() >= 100; }, 30s)) << two.seen().size();
  EXPECT_EQ(one.seen().size(), 100u);
  EXPECT_EQ(two.seen().size(), 100u) << "nothing the first one handled is handled again";
  EXPECT_TRUE(out_of_order(two.seen()).empty());
  auto all = one.seen();
  const auto more = two.seen();
  all.insert(all.end(), more.begin(), more.end());
  EXPECT_EQ(distinct(all).size(), 200u);
}

TEST(OrderedWork, ACleanRestartResumesAfterTheCheckpoint) {
  OrderedBroker b;
  publish_keys(b.admin, 20, 0, 5);
  {
    OrderedFleet first(b.server.url());
    ASSERT_TRUE(wait_for([&] { return first.seen().size() >= 100; }, 30s));
  }
  OrderedFleet second(b.server.url());
  publish_keys(b.admin, 20, 5, 6);
  ASSERT_TRUE(wait_for([&] { return second.seen().size() >= 20; }, 30s));
  std::this_thread::sleep_for(500ms);  // anything handled again would come with the new ones
  EXPECT_EQ(second.seen().size(), 20u) << "the first fleet's work is not handled again";
  EXPECT_TRUE(out_of_order(second.seen()).empty());
}

class OrderedRetention : public ::testing::TestWithParam<std::string> {};

TEST_P(OrderedRetention, EveryMessageOnceInOrderAndTheStreamLetsGoOfWhatIsDone) {
  auto plan = fleet::PartitionPlan::make("orders.*", 2, 16).value();
  NatsServer server({.extra_config = plan.mappings_block()});
  BrokerClient admin(server.url());
  auto made = admin.api().call("STREAM.CREATE.ORDERS", {{"name", "ORDERS"},
                                                        {"subjects", {plan.stored_subjects()}},
                                                        {"retention", GetParam()},
                                                        {"storage", "file"}});
  ASSERT_TRUE(made) << made.error().describe();
  // An interest stream keeps only what some consumer is to read: the readers come first.
  OrderedFleet f(server.url());
  ASSERT_TRUE(wait_for([&] { return f.health().partitions_owned.size() == 16; }, 30s));
  ASSERT_TRUE(wait_for(
      [&] {
        auto names = admin.api().consumer_names("ORDERS");
        return names && names->size() == 16;
      },
      30s));
  publish_keys(admin, 20, 0, 10);
  ASSERT_TRUE(wait_for([&] { return f.seen().size() >= 200; }, 30s)) << f.seen().size();
  EXPECT_EQ(distinct(f.seen()).size(), 200u);
  EXPECT_TRUE(out_of_order(f.seen()).empty());
  if (GetParam() != "limits") {
    EXPECT_TRUE(wait_for([&] { return admin.api().stream_info("ORDERS")->messages == 0; }, 10s))
        << admin.api().stream_info("ORDERS")->messages << " messages left: not acked";
  }
}

INSTANTIATE_TEST_SUITE_P(Streams, OrderedRetention,
                         ::testing::Values("limits", "interest", "workqueue"));

TEST(OrderedWork, AReaderWhoseConsumerIsDeletedReadsAgainLosingAndReorderingNothing) {
  OrderedBroker b;
  OrderedFleet f(b.server.url(), [](const Message&) {
    std::this_thread::sleep_for(1ms);
    return Disposition::ack();
  });
  publish_keys(b.admin, 20, 0, 10);
  ASSERT_TRUE(wait_for([&] { return f.seen().size() >= 50; }, 30s));
  const std::vector<std::string> readers = b.admin.api().consumer_names("ORDERS").value();
  for (const auto& name : readers) b.admin.delete_consumer("ORDERS", name);
  publish_keys(b.admin, 20, 10, 20);
  ASSERT_TRUE(wait_for([&] { return distinct(f.seen()).size() >= 400; }, 60s))
      << distinct(f.seen()).size();
  EXPECT_TRUE(out_of_order(f.seen()).empty());
  EXPECT_GT(f.health().rewinds, 0u);
}

// A stream that admits 8 consumers, for a work of 16 partitions: half the owners cannot make
// their reader's consumer (as when the meta leader is gone). They read their partitions by gets
// from the stream meanwhile, so every key goes on, in order.
TEST(OrderedWork, APartitionWhoseConsumerCannotBeMadeIsReadByGetsMeanwhile) {
  const auto plan = fleet::PartitionPlan::make("orders.*", 2, 16).value();
  NatsServer server({.extra_config = plan.mappings_block()});
  BrokerClient admin(server.url());
  auto created = admin.connection().request(
      "$JS.API.STREAM.CREATE.ORDERS",
      R"({"name":"ORDERS","subjects":[")" + plan.stored_subjects() + R"("],"max_consumers":8})",
      5s);
  ASSERT_TRUE(created) << created.error().describe();
  ASSERT_EQ(created->data.find("\"error\""), std::string::npos) << created->data;
  OrderedFleet f(server.url());
  publish_keys(admin, 40, 0, 10);
  ASSERT_TRUE(wait_for([&] { return distinct(f.seen()).size() >= 400; }, 60s))
      << distinct(f.seen()).size() << " of 400 handled";
  EXPECT_LE(admin.api().consumer_names("ORDERS").value().size(), 8u);
  EXPECT_TRUE(out_of_order(f.seen()).empty());
  std::set<int> partitions;
  for (const auto& s : f.seen()) partitions.insert(s.partition);
  EXPECT_EQ(partitions.size(), 16u) << "every partition read, with a consumer or without";
}

// A reader's consumer has one replica: with its server down it delivers nothing and answers no
// lookup, while its owner keeps the lease. The stream's leader, on a live node, holds the
// partition's messages: the reader finds its consumer serves nothing and reads on through a new
// one, so every key goes on, in order.
TEST(OrderedWork, AReaderWhoseConsumersServerIsDownReadsOnThroughANewOne) {
  const auto plan = fleet::PartitionPlan::make("orders.*", 2, 16).value();
  testing::NatsCluster cluster({.size = 3, .extra_config = plan.mappings_block()});
  BrokerClient admin(cluster.urls());
  admin.create_stream("ORDERS", {plan.stored_subjects()}, /*replicas=*/3);
  OrderedFleet f(cluster.urls());
  publish_keys(admin, 20, 0, 5);
  ASSERT_TRUE(wait_for([&] { return distinct(f.seen()).size() >= 100; }, 60s))
      << distinct(f.seen()).size();
  std::map<std::string, int> readers_on;  // server -> readers it serves
  const std::vector<std::string> readers = admin.api().consumer_names("ORDERS").value();
  for (const auto& name : readers)
    if (auto info = admin.api().consumer_info("ORDERS", name); info && !info->leader.empty())
      ++readers_on[info->leader];
  ASSERT_FALSE(readers_on.empty());
  const auto busiest = std::max_element(readers_on.begin(), readers_on.end(),
                                        [](auto& a, auto& b) { return a.second < b.second; });
  testing::NatsServer* node = cluster.find(busiest->first);
  ASSERT_NE(node, nullptr) << busiest->first;
  std::vector<std::string> live;
  for (int i = 0; i < cluster.size(); ++i)
    if (&cluster.node(i) != node) live.push_back(cluster.node(i).url());
  node->kill();
  BrokerClient publisher(live);
  ASSERT_TRUE(
      wait_for([&] { return static_cast<bool>(publisher.api().stream_info("ORDERS")); }, 30s));
  publish_keys(publisher, 20, 5, 15);
  ASSERT_TRUE(wait_for([&] { return distinct(f.seen()).size() >= 300; }, 60s))
      << distinct(f.seen()).size() << " of 300 handled, " << busiest->second
      << " readers were on the killed node";
  // A lease bucket whose leader was on that node can lapse a lease: a new term replays from its
  // checkpoint, so order is checked within each term.
  std::vector<Handled> handled;
  for (const auto& s : f.seen()) {
    const size_t colon = s.data.find(':');
    handled.push_back(
        {0, s.seq, s.data.substr(0, colon), std::stoi(s.data.substr(colon + 1)), s.epoch});
  }
  EXPECT_TRUE(order_violations(handled).empty());
  // Its readers on that node read on through new consumers: by a rewind, or, where the lease
  // lapsed first, by the new term's reader.
  const auto h = f.health();
  if (h.leases_lost == 0) {
    EXPECT_GE(h.rewinds, 1u);
  }
}

TEST(OrderedWork, ATakeoverReadsOnThroughTheKilledOwnersConsumersAndAgainWhatTheyHeld) {
  OrderedBroker b;
  const std::string out = "/tmp/natsfleet-adopt-" + std::to_string(getpid());
  std::remove(out.c_str());
  auto owner = base::ChildProcess::start(
      {NATSFLEET_REPLICA_BIN, "--server", b.server.url(), "--work", "orders", "--subject",
       "orders.*", "--out", out, "--key-token", "2", "--handle-ms", "20", "--concurrency", "4",
       "--lease-ms", "1500"},
      {.search_path = false});
  ASSERT_TRUE(owner) << owner.error().describe();
  publish_keys(b.admin, 20, 0, 20);
  // Each handler takes 20 ms after writing its line: the owner dies with most of each
  // partition delivered to it and not done.
  ASSERT_TRUE(wait_for([&] { return read_handled({out}).size() >= 50; }, 30s));
  owner->kill();
  auto names = [&] {
    auto n = b.admin.api().consumer_names("ORDERS").value();
    std::sort(n.begin(), n.end());
    return n;
  };
  const auto readers = names();
  ASSERT_EQ(readers.size(), 16u);
  OrderedFleet f(b.server.url());
  std::set<uint64_t> by_owner;
  for (const auto& h : read_handled({out})) by_owner.insert(h.seq);
  auto handled = [&] {
    auto all = by_owner;
    for (const auto& s : f.seen()) all.insert(s.seq);
    return all.size();
  };
  ASSERT_TRUE(wait_for([&] { return handled() == 400; }, 60s)) << handled() << " of 400";
  EXPECT_EQ(names(), readers) << "the new owner made consumers instead of adopting";
  EXPECT_TRUE(out_of_order(f.seen()).empty());
  size_t again = 0;
  for (const auto& s : f.seen()) again += by_owner.count(s.seq);
  EXPECT_GT(again, 0u) << "the owner held nothing when it died";
  EXPECT_EQ(f.health().rewinds, 0u);
  std::remove(out.c_str());
}

TEST(OrderedWork, ADownstreamThatIsDownHoldsTheMessagesAndUsesNoDelivery) {
  OrderedBroker b;
  std::atomic<bool> down{true};
  OrderedFleet f(
      b.server.url(),
      [&](const Message&) {
        return down ? Disposition::retry().because("the sink is down") : Disposition::ack();
      },
      [](WorkSpec& s) {
        s.failure.max_deliver = 1;
        s.failure.retry_min = 20ms;
        s.failure.retry_max = 100ms;
      });
  publish_keys(b.admin, 4, 0, 5);
  ASSERT_TRUE(wait_for([&] { return f.health().downstream_down; }, 30s));
  ASSERT_TRUE(wait_for([&] { return f.health().counters.retried >= 20; }, 30s));
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(f.count("k" + std::to_string(k) + ":1"), 0u) << "a key's next waits behind it";
  down = false;
  ASSERT_TRUE(wait_for([&] { return distinct(f.seen()).size() == 20; }, 30s));
  EXPECT_TRUE(out_of_order(f.seen()).empty());
  EXPECT_EQ(f.health().counters.termed, 0u) << "a downstream that is down uses no delivery";
  EXPECT_TRUE(wait_for([&] { return !f.health().downstream_down; }, 5s));
}

// Retry is for a downstream that is down. One message that keeps failing while the others
// succeed is the problem itself: it uses its deliveries, is set aside, and its key goes on.
TEST(OrderedWork, AMessageThatFailsWhileOthersSucceedIsRejectedNotHeldForEver) {
  OrderedBroker b;
  b.admin.create_stream("DEAD", {"dead.orders"});
  OrderedFleet f(
      b.server.url(),
      [&](const Message& m) {
        return m.data() == "k0:1" ? Disposition::retry().because("this one fails")
                                  : Disposition::ack();
      },
      [](WorkSpec& s) {
        s.failure.max_deliver = 2;
        s.failure.retry_min = 20ms;
        s.failure.retry_max = 50ms;
        s.failure.dead_letter = "dead.orders";
      });
  publish_keys(b.admin, 1, 0, 3);
  ASSERT_TRUE(wait_for([&] { return f.health().counters.retried >= 1; }, 30s));
  // Other keys' messages succeed meanwhile.
  int n = 0;
  ASSERT_TRUE(wait_for(
      [&] {
        b.admin.publish("orders.other", "other:" + std::to_string(n++));
        return f.count("k0:2") == 1;
      },
      30s));
  EXPECT_TRUE(out_of_order(f.seen()).empty());
  EXPECT_EQ(f.health().counters.dead_lettered, 1u);
  EXPECT_EQ(b.admin.api().stream_info("DEAD")->messages, 1u);
}

TEST(OrderedWork, ARejectedMessageIsTriedInPlaceThenSetAsideAndItsKeyGoesOn) {
  OrderedBroker b;
  b.admin.create_stream("DEAD", {"dead.orders"});
  OrderedFleet f(
      b.server.url(),
      [](const Message& m) {
        return m.data() == "k:1" ? Disposition::nak().because("bad") : Disposition::ack();
      },
      [](WorkSpec& s) {
        s.failure.max_deliver = 3;
        s.failure.dead_letter = "dead.orders";
      });
  for (int n = 0; n < 3; ++n) b.admin.publish("orders.k", "k:" + std::to_string(n));
  ASSERT_TRUE(wait_for([&] { return f.count("k:2") == 1; }, 30s));
  std::vector<std::string> order;
  for (const auto& s : f.seen()) order.push_back(s.data);
  EXPECT_EQ(order, (std::vector<std::string>{"k:0", "k:1", "k:1", "k:1", "k:2"}));
  EXPECT_EQ(b.admin.api().stream_info("DEAD")->messages, 1u);
  EXPECT_EQ(f.health().counters.dead_lettered, 1u);
}

bool stopped(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t end = line.rfind(')');
  return end != std::string::npos && end + 2 < line.size() && line[end + 2] == 'T';
}

// An owner that took k1:5 pauses before its write, past its lease. Another replica takes the
// partition, handles k1:5 and the key's next messages; then the paused one resumes and writes
// k1:5 late. No client can stop that write: a downstream applying the fencing rule ignores it.
TEST(OrderedWork, APausedOwnersLateWriteIsIgnoredByAFencingDownstream) {
  OrderedBroker b;
  std::vector<std::string> files;
  auto start_replica = [&](int i, const std::string& pause_on) {
    const std::string out =
        "/tmp/natsfleet-fence-" + std::to_string(getpid()) + "-" + std::to_string(i);
    std::remove(out.c_str());
    files.push_back(out);
    std::vector<std::string> argv{NATSFLEET_REPLICA_BIN,
                                  "--server",
                                  b.server.url(),
                                  "--work",
                                  "orders",
                                  "--subject",
                                  "orders.*",
                                  "--out",
                                  out,
                                  "--key-token",
                                  "2",
                                  "--lease-ms",
                                  "1500",
                                  "--concurrency",
                                  "4"};
    if (!pause_on.empty()) {
      argv.push_back("--pause-on");
      argv.push_back(pause_on);
    }
    auto child = base::ChildProcess::start(argv, {.search_path = false});
    EXPECT_TRUE(child) << child.error().describe();
    return std::move(child.value());
  };
  auto paused = start_replica(0, "k1:5");
  publish_keys(b.admin, 3, 0, 6);
  ASSERT_TRUE(wait_for([&] { return stopped(paused.pid()); }, 30s)) << "never took k1:5";
  auto peer = start_replica(1, "");
  ASSERT_TRUE(wait_for([&] { return !read_handled({files[1]}).empty(); }, 30s));
  publish_keys(b.admin, 3, 6, 10);
  auto peer_saw = [&](const std::string& data) {
    for (const auto& h : read_handled({files[1]}))
      if (h.key + ":" + std::to_string(h.n) == data) return true;
    return false;
  };
  ASSERT_TRUE(
      wait_for([&] { return peer_saw("k0:9") && peer_saw("k1:9") && peer_saw("k2:9"); }, 30s));
  ASSERT_TRUE(paused.signal(SIGCONT));
  auto late = [&] {
    for (const auto& h : read_handled({files[0]}))
      if (h.key == "k1" && h.n == 5) return true;
    return false;
  };
  ASSERT_TRUE(wait_for(late, 10s)) << "the resumed replica did not write k1:5";
  const auto arrivals = read_handled(files);  // in the order they reached the downstream
  EXPECT_EQ(downstream_state(arrivals, false)["k1"], 5) << "the late write did arrive last";
  const auto fenced = downstream_state(arrivals, true);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(fenced.at("k" + std::to_string(k)), 9) << k;
  paused.kill();
  peer.kill();
  for (const auto& f : files) std::remove(f.c_str());
}
}  // namespace
}  // namespace natsfleet
