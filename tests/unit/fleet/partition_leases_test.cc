// The lease rules of ordered work (fleet/ordered/partition_leases.h) on a simulated clock and a
// store in memory: take, renew, lapse, stale commit, handover.
#include "fleet/ordered/partition_leases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>

namespace natsfleet::fleet {
namespace {

using namespace std::chrono_literals;
using Clock = PartitionLeases::Clock;

// A key-value store with compare-and-set, as the broker's bucket behaves; `down` makes every
// call fail as an unreachable broker does; `each_write` runs before every write (a slow store).
class MemoryStore final : public LeaseStore {
 public:
  Result<std::optional<StoredValue>> get(const std::string& key) override {
    if (down) return unreachable();
    auto it = values.find(key);
    if (it == values.end()) return std::optional<StoredValue>();
    return std::optional<StoredValue>(it->second);
  }
  Result<uint64_t> put_if(const std::string& key, const std::string& value,
                          uint64_t expected) override {
    if (each_write) each_write();
    if (down) return unreachable();
    auto it = values.find(key);
    const uint64_t last = it == values.end() ? 0 : it->second.revision;
    if (last != expected)
      return Error{std::error_code(kJsWrongLastSequence, jetstream_category()), "wrong last"};
    return write(key, value);
  }
  Result<uint64_t> put(const std::string& key, const std::string& value) override {
    if (each_write) each_write();
    if (down) return unreachable();
    return write(key, value);
  }
  Result<void> remove(const std::string& key) override {
    if (each_write) each_write();
    if (down) return Result<void>(Errc::timeout, "unreachable");
    values.erase(key);
    return {};
  }
  Result<std::vector<std::string>> keys(const std::string& prefix) override {
    if (down) return unreachable();
    std::vector<std::string> out;
    for (const auto& [k, _] : values)
      if (k.rfind(prefix, 0) == 0) out.push_back(k);
    return out;
  }

  LeaseValue lease(int p) const { return *LeaseValue::decode(values.at(lease_key(p)).value); }

  std::map<std::string, StoredValue> values;
  uint64_t sequence = 0;
  bool down = false;
  std::function<void()> each_write;

 private:
  static Error unreachable() { return Error{make_error_code(Errc::timeout), "unreachable"}; }
  uint64_t write(const std::string& key, const std::string& value) {
    values[key] = StoredValue{++sequence, value};
    return sequence;
  }
};

constexpr int kPartitions = 8;
constexpr auto kLease = 5000ms;
constexpr auto kMargin = 1000ms;
constexpr auto kSettle = 3000ms;

class Leases : public ::testing::Test {
 protected:
  PartitionLeases replica(const std::string& id, std::chrono::milliseconds settle = kSettle) {
    return PartitionLeases(store, options(id, settle), [this] { return now; });
  }
  std::unique_ptr<PartitionLeases> replica_on_heap(const std::string& id,
                                                   std::chrono::milliseconds settle) {
    return std::make_unique<PartitionLeases>(store, options(id, settle), [this] { return now; });
  }
  static PartitionLeases::Options options(const std::string& id, std::chrono::milliseconds settle) {
    return {.me = id,
            .partitions = kPartitions,
            .lease = kLease,
            .margin = kMargin,
            .forget_member_after = 60s,
            .settle = settle};
  }
  static Progress none(int) { return {}; }

  MemoryStore store;
  Clock::time_point now{Clock::duration(1'000'000'000)};
};

std::vector<int> sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST_F(Leases, TheOnlyMemberTakesEveryPartitionEachUnderItsOwnEpoch) {
  auto a = replica("a");
  auto changes = a.round(none);
  EXPECT_FALSE(changes.error);
  ASSERT_EQ(sorted(changes.taken).size(), size_t{kPartitions});
  std::set<uint64_t> epochs;
  for (int p = 0; p < kPartitions; ++p) {
    ASSERT_TRUE(a.may_act(p));
    epochs.insert(a.owned(p)->epoch);
    EXPECT_EQ(store.lease(p).owner, "a");
  }
  EXPECT_EQ(epochs.size(), size_t{kPartitions});
}

TEST_F(Leases, AMemberThatJoinsGetsItsShareByAHandoverAndANewEpoch) {
  auto a = replica("a");
  auto b = replica("b");
  (void)a.round(none);
  now += 1s;
  // b sees a live and its leases renewed: it takes nothing a holds.
  EXPECT_TRUE(b.round(none).taken.empty());
  // a first sees b in its next round, and hands b its share once b has been live for kSettle.
  PartitionLeases::Changes handing;
  Clock::time_point first_seen{};
  for (int i = 0; i < 20 && handing.to_release.empty(); ++i) {
    now += 500ms;
    (void)b.round(none);
    handing = a.round([](int p) { return Progress{.checkpoint = uint64_t(100 + p)}; });
    if (first_seen == Clock::time_point{}) first_seen = now;
  }
  ASSERT_FALSE(handing.to_release.empty()) << "a sees b and gives up b's share";
  EXPECT_GE(now - first_seen, kSettle) << "not before b has been live for kSettle";
  EXPECT_LT(now - first_seen, kSettle + 1s);
  std::map<int, uint64_t> old_epochs;
  for (int p : handing.to_release) {
    EXPECT_EQ(PartitionLeases::assignee({"a", "b"}, p), "b");
    old_epochs[p] = a.owned(p)->epoch;
    ASSERT_TRUE(a.release(p, {.checkpoint = uint64_t(100 + p)}));
    EXPECT_FALSE(a.may_act(p));
    EXPECT_TRUE(store.lease(p).released);
  }
  now += 1s;
  auto taking = b.round(none);
  EXPECT_EQ(sorted(taking.taken), sorted(handing.to_release))
      << "a released lease is taken at once";
  for (int p : taking.taken) {
    EXPECT_EQ(b.owned(p)->checkpoint, uint64_t(100 + p)) << "the checkpoint comes with the lease";
    EXPECT_GT(b.owned(p)->epoch, old_epochs[p]);
  }
  // Each partition has exactly one owner.
  for (int p = 0; p < kPartitions; ++p) EXPECT_NE(a.may_act(p), b.may_act(p)) << p;
}

TEST_F(Leases, AMemberThatFlapsMovesNothingUntilItHasBeenLiveForTheSettleTime) {
  auto a = replica("a");
  auto b = replica("b");
  (void)a.round(none);
  (void)b.round(none);
  for (int i = 0; i < 8; ++i) {  // b live long enough: its share moves to it
    now += 500ms;
    (void)b.round(none);
    for (int p : a.round(none).to_release) ASSERT_TRUE(a.release(p, {}));
  }
  (void)b.round(none);
  const auto bs = b.owned_partitions().size();
  ASSERT_GT(bs, 0u);
  // b's key goes silent for a lease (its link cut): a takes b's share back.
  for (int i = 0; i < 12; ++i) {
    now += 500ms;
    (void)a.round(none);
  }
  ASSERT_EQ(a.owned_partitions().size(), size_t{kPartitions});
  // b is back. a keeps everything until b has been live for kSettle again.
  for (int i = 0; i < 5; ++i) {
    now += 500ms;
    (void)b.round(none);
    EXPECT_TRUE(a.round(none).to_release.empty()) << "b live for " << (i + 1) * 500 << " ms";
  }
  now += 500ms;
  (void)b.round(none);
  now += 500ms;
  (void)b.round(none);
  EXPECT_EQ(a.round(none).to_release.size(), bs) << "b settled: its share moves to it";
}

TEST_F(Leases, EpochsRiseAcrossOwners) {
  auto a = replica("a");
  (void)a.round(none);
  const uint64_t first = a.owned(3)->epoch;
  ASSERT_TRUE(a.release(3, {.checkpoint = 7}));
  auto b = replica("b");
  now += 1s;
  (void)b.round(none);  // b alone sees itself and a: a's share stays a's, a released p3
  if (!b.owned(3)) {
    a.leave(none);
    now += kLease + kMargin + 1s;
    (void)b.round(none);
  }
  ASSERT_TRUE(b.owned(3));
  EXPECT_GT(b.owned(3)->epoch, first);
}

TEST_F(Leases, AHeldLeaseIsTakenOnlyAfterAWholeLeaseUnrenewed) {
  auto a = replica("a");
  (void)a.round(none);
  // a stops renewing (killed, or paused) from here on, and its member key is gone: every
  // partition is b's by assignment from b's first round.
  store.values.erase(member_key("a"));
  auto b = replica("b");
  now += 1s;
  EXPECT_TRUE(b.round(none).taken.empty()) << "a lease seen held is not taken at first sight";
  now += kLease - 1ms;
  EXPECT_TRUE(b.round(none).taken.empty()) << "unchanged for less than a lease: kept";
  now += 1ms;
  EXPECT_EQ(b.round(none).taken.size(), size_t{kPartitions});
}

TEST_F(Leases, TheLeasesOfAMemberSeenSilentForALeaseAreTakenAtOnce) {
  auto a = replica("a");
  auto b = replica("b");
  (void)a.round(none);
  (void)b.round(none);  // b sees a live; a holds every lease
  // a dies. b watches a's member key, not yet the leases of a's share.
  for (int i = 0; i < 9; ++i) {
    now += 500ms;
    (void)b.round(none);
  }
  EXPECT_LT(b.owned_partitions().size(), size_t{kPartitions});
  now += 500ms;  // a's key unchanged for a whole lease: a's leases are taken with no more wait
  (void)b.round(none);
  EXPECT_EQ(b.owned_partitions().size(), size_t{kPartitions});
}

// A replica that restarts again and again (a crash loop, a pod killed twice) is a new member each
// time: a lapsed partition is not left waiting for one of them, who would take it only after a
// lease of its own, but goes to a member live for the settle time (two leases, as ordered work
// runs it).
TEST_F(Leases, MembersThatJoinAndGoAgainHoldUpNoLapsedPartition) {
  constexpr auto kTwoLeases = 2 * kLease;
  auto b = replica("b", kTwoLeases);
  auto a = replica("a", kTwoLeases);
  (void)b.round(none);
  ASSERT_EQ(b.owned_partitions().size(), size_t{kPartitions});
  for (int i = 0; i < 24; ++i) {  // a live for more than the settle time; b keeps every lease
    now += 500ms;
    (void)b.round(none);
    EXPECT_TRUE(a.round(none).taken.empty());
  }
  // b dies. Newcomers come one after another, each for 2 s, as a restarted process would.
  const Clock::time_point died = now;
  int newcomer = 0;
  std::unique_ptr<PartitionLeases> current;
  Clock::time_point current_since = now;
  while (a.owned_partitions().size() < size_t{kPartitions} && now - died < 4 * kLease) {
    if (!current || now - current_since >= 2s) {
      current = replica_on_heap("c" + std::to_string(++newcomer), kTwoLeases);
      current_since = now;
    }
    now += 500ms;
    EXPECT_TRUE(current->round(none).taken.empty()) << "a newcomer takes no lapsed lease";
    (void)a.round(none);
  }
  EXPECT_EQ(a.owned_partitions().size(), size_t{kPartitions});
  EXPECT_LE(now - died, kLease + 1s) << newcomer << " newcomers came meanwhile";
}

TEST_F(Leases, AnOwnerWhoseMembershipCannotBeWrittenStopsActing) {
  auto a = replica("a");
  const Clock::time_point joined = now;
  (void)a.round(none);
  now = joined + 1s;
  (void)a.round(none);  // lease and membership renewed at joined + 1s
  store.down = true;
  now = joined + 1s + kLease - kMargin - 1ms;
  EXPECT_TRUE(a.may_act(0));
  now = joined + 1s + kLease - kMargin;
  EXPECT_FALSE(a.may_act(0));
}

TEST_F(Leases, AStoreOutageIsNotTakenForAnOwnerThatStoppedRenewing) {
  auto a = replica("a");
  auto b = replica("b");
  (void)a.round(none);
  (void)b.round(none);
  store.down = true;  // neither can write or read for longer than a lease
  now += kLease + 1s;
  (void)b.round(none);
  (void)a.round(none);
  store.down = false;
  now += 500ms;
  EXPECT_TRUE(b.round(none).taken.empty()) << "unchanged while nobody could write: not lapsed";
  auto renewed = a.round(none);
  EXPECT_TRUE(renewed.lost.empty());
  EXPECT_TRUE(a.may_act(a.owned_partitions().front()));
}

TEST_F(Leases, TimeTheStoreDidNotAnswerDoesNotCountTheTimeAroundItDoes) {
  auto a = replica("a");
  auto b = replica("b");
  (void)a.round(none);
  (void)b.round(none);  // b sees a live; a holds every lease. a dies now.
  for (int i = 0; i < 6; ++i) {
    now += 500ms;
    (void)b.round(none);  // 3 s of a's silence watched
  }
  store.down = true;
  now += 20s;
  (void)b.round(none);
  store.down = false;
  now += 500ms;
  (void)b.round(none);  // answered again: the time since the last answer does not count
  EXPECT_TRUE(b.owned_partitions().empty()) << "3 s watched of a 5 s lease";
  for (int i = 0; i < 3; ++i) {
    now += 500ms;
    (void)b.round(none);
  }
  EXPECT_TRUE(b.owned_partitions().empty()) << "4.5 s watched";
  now += 500ms;
  (void)b.round(none);
  EXPECT_EQ(b.owned_partitions().size(), size_t{kPartitions})
      << "a whole lease watched, the outage left out: no lease's wait again from zero";
}

TEST_F(Leases, AnOwnerStopsActingBeforeATakerCanBegin) {
  auto a = replica("a");
  const Clock::time_point renewed = now;
  (void)a.round(none);
  now = renewed + kLease - kMargin - 1ms;
  EXPECT_TRUE(a.may_act(0));
  now = renewed + kLease - kMargin;
  EXPECT_FALSE(a.may_act(0)) << "no handler starts once the lease may lapse";
}

TEST_F(Leases, AStaleOwnersRenewalFailsAndItStopsAtOnce) {
  auto a = replica("a");
  (void)a.round(none);
  store.values.erase(member_key("a"));  // its key lapsed, as a paused member's does
  auto b = replica("b");
  now += 1s;
  (void)b.round(none);
  now += kLease;  // a was paused all this time
  (void)b.round(none);
  ASSERT_EQ(b.owned_partitions().size(), size_t{kPartitions});
  // a resumes: its clock moved too; its renewals are refused, and it stops.
  auto resumed = a.round([](int) { return Progress{.checkpoint = 999}; });
  EXPECT_EQ(sorted(resumed.lost).size(), size_t{kPartitions});
  for (int p = 0; p < kPartitions; ++p) {
    EXPECT_FALSE(a.may_act(p));
    EXPECT_EQ(store.lease(p).owner, "b");
    EXPECT_NE(store.lease(p).checkpoint, uint64_t{999}) << "a stale owner commits nothing";
  }
}

TEST_F(Leases, AnUnreachableStoreLetsTheLeaseLapseHereAndARenewalRestoresIt) {
  auto a = replica("a");
  (void)a.round(none);
  store.down = true;
  now += kLease - kMargin;
  auto cut = a.round(none);
  ASSERT_TRUE(cut.error);
  EXPECT_TRUE(cut.lost.empty()) << "not answered is not lost";
  EXPECT_FALSE(a.may_act(0));
  store.down = false;
  now += 1s;
  auto back = a.round(none);
  EXPECT_TRUE(back.lost.empty());
  EXPECT_TRUE(a.may_act(0)) << "nobody took it: the renewal holds";
}

TEST_F(Leases, ALeaseTheStoreLostIsTakenAgainWithItsLastCheckpointNotAsAFirstOwner) {
  auto a = replica("a");
  (void)a.round(none);
  now += 500ms;
  (void)a.round([](int p) { return Progress{.checkpoint = uint64_t(70 + p), .reader = "r"}; });
  // The store drops partition 3's key, as a broker whose per-subject state went wrong does: the
  // renewal expecting its revision is refused, and the key then reads absent.
  store.values.erase(lease_key(3));
  now += 500ms;
  auto refused = a.round(none);
  EXPECT_EQ(refused.lost, std::vector<int>{3});
  now += 500ms;
  auto again = a.round(none);
  EXPECT_EQ(again.vanished, std::vector<int>{3});
  EXPECT_EQ(again.taken, std::vector<int>{3});
  ASSERT_TRUE(a.owned(3));
  EXPECT_EQ(a.owned(3)->checkpoint, uint64_t{73}) << "what was done stays done";
  EXPECT_EQ(a.owned(3)->reader, "r");
  EXPECT_FALSE(a.owned(3)->first) << "a first owner would start where WorkSpec::start says";
  // Another replica that saw the lease before it vanished keeps its checkpoint too.
  store.values.erase(lease_key(3));
  auto b = replica("b");
  EXPECT_TRUE(b.round(none).vanished.empty()) << "b never saw the key: nothing vanished for it";
}

TEST_F(Leases, ACheckpointCommitsWithTheRenewal) {
  auto a = replica("a");
  (void)a.round(none);
  now += 1s;
  (void)a.round([](int p) { return Progress{.checkpoint = uint64_t(40 + p)}; });
  for (int p = 0; p < kPartitions; ++p) EXPECT_EQ(store.lease(p).checkpoint, uint64_t(40 + p));
  (void)a.round(none);
  EXPECT_EQ(store.lease(2).checkpoint, uint64_t{42}) << "a checkpoint never goes back";
}

TEST_F(Leases, LeavingReleasesEveryLeaseForTheSurvivorAtOnce) {
  auto a = replica("a");
  auto b = replica("b");
  (void)a.round(none);
  (void)b.round(none);
  (void)a.round(none);
  for (int p : a.owned_partitions())
    if (PartitionLeases::assignee({"a", "b"}, p) == "b") {
      ASSERT_TRUE(a.release(p, {}));
    }
  (void)b.round(none);
  a.leave([](int) { return Progress{.checkpoint = 5}; });
  now += 1ms;
  (void)b.round(none);  // a's member key is gone: b is the only member, its leases released
  EXPECT_EQ(b.owned_partitions().size(), size_t{kPartitions});
}

TEST_F(Leases, LeavingStopsAtItsDeadlineAndLeavesTheRestToLapse) {
  auto a = replica("a");
  ASSERT_EQ(a.round(none).taken.size(), size_t{kPartitions});
  store.each_write = [this] { now += 1s; };  // every write takes a second
  const auto deadline = now + 3500ms;
  a.leave(none, deadline);
  EXPECT_LE(now, deadline + 1s) << "no write began after the deadline";
  int released = 0;
  for (int p = 0; p < kPartitions; ++p) released += store.lease(p).released ? 1 : 0;
  EXPECT_EQ(released, 4) << "writes begun at 0, 1, 2 and 3 s";
  EXPECT_TRUE(store.values.count(member_key("a"))) << "the member key lapses too";
}

TEST_F(Leases, ARoundCutShortMakesNoFurtherStoreCall) {
  auto a = replica("a");
  ASSERT_EQ(a.round(none).taken.size(), size_t{kPartitions});
  int writes = 0;
  store.each_write = [&] {
    if (++writes == 2) a.cut_short();  // the member key written, the first renewal under way
  };
  now += 500ms;
  (void)a.round(none);
  EXPECT_EQ(writes, 2) << "renewals went on after the cut";
  (void)a.round(none);
  EXPECT_EQ(writes, 2) << "a later round wrote";
  a.leave(none);
  EXPECT_EQ(writes, 2 + kPartitions + 1) << "leave releases every lease and the membership";
}

TEST_F(Leases, AMemberKeyUnchangedForLongIsForgotten) {
  auto a = replica("a");
  (void)a.round(none);
  auto b = replica("b");
  (void)b.round(none);
  now += 61s;
  (void)b.round(none);
  EXPECT_EQ(store.values.count(member_key("a")), size_t{0});
  EXPECT_EQ(b.members(), std::vector<std::string>{"b"});
}

TEST(Assignment, MembersWhoseIdsDifferAtTheirEndShareThePartitions) {
  const std::vector<std::string> members{"host-4242-100001", "host-4242-100002",
                                         "host-4242-100003"};
  std::map<std::string, int> share;
  for (int p = 0; p < 48; ++p) ++share[PartitionLeases::assignee(members, p)];
  for (const auto& m : members) EXPECT_GE(share[m], 8) << m;
}

TEST(LeaseValue, ReadsWhatItWrites) {
  const LeaseValue v{.owner = "host-1-77", .epoch = 12, .checkpoint = 900, .released = true};
  auto back = LeaseValue::decode(v.encode());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->owner, "host-1-77");
  EXPECT_EQ(back->epoch, uint64_t{12});
  EXPECT_EQ(back->checkpoint, uint64_t{900});
  EXPECT_TRUE(back->released);
  EXPECT_TRUE(back->reader.empty());
  EXPECT_FALSE(LeaseValue::decode("garbage"));
  const LeaseValue named{.owner = "a", .epoch = 3, .checkpoint = 4, .reader = "orders-p1-e3g0"};
  EXPECT_EQ(LeaseValue::decode(named.encode())->reader, "orders-p1-e3g0");
}

TEST_F(Leases, TheNextOwnerLearnsWhichConsumerTheLastOneReadThrough) {
  auto a = replica("a");
  auto b = replica("b");
  auto named = [](int p) { return Progress{.checkpoint = 10, .reader = "r" + std::to_string(p)}; };
  (void)a.round(named);  // takes every lease
  now += 500ms;
  (void)a.round(named);  // renews them with its progress
  for (int p = 0; p < kPartitions; ++p) EXPECT_EQ(store.lease(p).reader, "r" + std::to_string(p));
  // Before its reader is open a new owner commits the name it inherited.
  ASSERT_TRUE(a.release(0, {.checkpoint = 11}));
  EXPECT_EQ(store.lease(0).reader, "r0");
  a.leave([](int) { return Progress{.checkpoint = 12, .reader = "gone"}; });
  now += 1s;
  (void)b.round(none);
  for (int p = 0; p < kPartitions; ++p) {
    ASSERT_TRUE(b.owned(p)) << p;
    EXPECT_EQ(b.owned(p)->reader, p == 0 ? "r0" : "gone") << p;
  }
}

}  // namespace
}  // namespace natsfleet::fleet
