#include "relay/session_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace natsfleet::relay {
namespace {

// Records what it is handed; can be closed or made to refuse like a full queue.
class FakeSession : public RelaySession {
 public:
  bool deliver(std::shared_ptr<const std::string> payload) override {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    if (refuse_next_) {
      closed_ = true;  // what a session with a full queue does
      return false;
    }
    received_.push_back(std::move(payload));
    return true;
  }
  bool closed() const override {
    std::lock_guard lock(mu_);
    return closed_;
  }
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  void refuse_next() {
    std::lock_guard lock(mu_);
    refuse_next_ = true;
  }
  std::vector<std::shared_ptr<const std::string>> received() const {
    std::lock_guard lock(mu_);
    return received_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<const std::string>> received_;
  bool closed_ = false;
  bool refuse_next_ = false;
};

std::shared_ptr<const std::string> payload(std::string text) {
  return std::make_shared<const std::string>(std::move(text));
}

std::vector<std::string> texts(const FakeSession& s) {
  std::vector<std::string> out;
  for (const auto& p : s.received()) out.push_back(*p);
  return out;
}

TEST(SessionRegistry, DeliversOnlyToTheMembersOwnSessions) {
  SessionRegistry registry;
  auto alice1 = std::make_shared<FakeSession>();
  auto alice2 = std::make_shared<FakeSession>();
  auto bob = std::make_shared<FakeSession>();
  registry.add("alice", alice1);
  registry.add("alice", alice2);
  registry.add("bob", bob);

  EXPECT_EQ(registry.deliver("alice", payload("a1")), 2u);
  EXPECT_EQ(registry.deliver("bob", payload("b1")), 1u);
  EXPECT_EQ(registry.deliver("alice", payload("a2")), 2u);
  EXPECT_EQ(registry.deliver("carol", payload("c1")), 0u);
  EXPECT_EQ(registry.deliver("alic", payload("prefix")), 0u);

  EXPECT_EQ(texts(*alice1), (std::vector<std::string>{"a1", "a2"}));
  EXPECT_EQ(texts(*alice2), (std::vector<std::string>{"a1", "a2"}));
  EXPECT_EQ(texts(*bob), (std::vector<std::string>{"b1"}));

  const auto stats = registry.stats();
  EXPECT_EQ(stats.members, 2u);
  EXPECT_EQ(stats.sessions, 3u);
  EXPECT_EQ(stats.delivered, 5u);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.unrouted, 2u);
}

TEST(SessionRegistry, OneStatusIsSharedNotCopied) {
  SessionRegistry registry;
  auto a = std::make_shared<FakeSession>();
  auto b = std::make_shared<FakeSession>();
  registry.add("alice", a);
  registry.add("alice", b);
  const auto status = payload(R"({"member":"alice","state":"synced"})");
  EXPECT_EQ(registry.deliver("alice", status), 2u);
  EXPECT_EQ(a->received().at(0).get(), status.get());
  EXPECT_EQ(b->received().at(0).get(), status.get());
  EXPECT_EQ(registry.deliver("alice", nullptr), 0u);
}

TEST(SessionRegistry, RemoveForgetsTheSessionOnce) {
  SessionRegistry registry;
  auto a = std::make_shared<FakeSession>();
  auto b = std::make_shared<FakeSession>();
  const SessionId ida = registry.add("alice", a);
  const SessionId idb = registry.add("alice", b);
  EXPECT_NE(ida, idb);
  EXPECT_TRUE(registry.remove(ida));
  EXPECT_FALSE(registry.remove(ida));
  EXPECT_EQ(registry.deliver("alice", payload("x")), 1u);
  EXPECT_TRUE(a->received().empty());
  EXPECT_TRUE(registry.remove(idb));
  EXPECT_EQ(registry.stats().members, 0u);
  EXPECT_EQ(registry.stats().sessions, 0u);
  EXPECT_EQ(registry.sessions("alice"), 0u);
}

TEST(SessionRegistry, ClosedAndRefusingSessionsArePrunedAndCounted) {
  SessionRegistry registry;
  auto open = std::make_shared<FakeSession>();
  auto closed = std::make_shared<FakeSession>();
  auto full = std::make_shared<FakeSession>();
  registry.add("alice", open);
  const SessionId closed_id = registry.add("alice", closed);
  registry.add("alice", full);
  closed->close();
  full->refuse_next();

  EXPECT_EQ(registry.deliver("alice", payload("s1")), 1u);
  EXPECT_EQ(registry.sessions("alice"), 1u);
  EXPECT_EQ(registry.stats().dropped, 2u);
  EXPECT_FALSE(registry.remove(closed_id));  // already pruned; the transport's remove is harmless
  EXPECT_EQ(registry.deliver("alice", payload("s2")), 1u);
  EXPECT_EQ(texts(*open), (std::vector<std::string>{"s1", "s2"}));

  open->close();
  EXPECT_EQ(registry.deliver("alice", payload("s3")), 0u);
  EXPECT_EQ(registry.stats().members, 0u);
}

// A session that removes itself from inside deliver(), as a transport may when its queue overflows.
class SelfRemovingSession : public RelaySession {
 public:
  explicit SelfRemovingSession(SessionRegistry& r) : registry_(r) {}
  bool deliver(std::shared_ptr<const std::string>) override {
    closed_ = true;
    registry_.remove(id);
    return false;
  }
  bool closed() const override { return closed_; }
  SessionId id = 0;

 private:
  SessionRegistry& registry_;
  std::atomic<bool> closed_{false};
};

TEST(SessionRegistry, ASessionMayRemoveItselfWhileBeingDelivered) {
  SessionRegistry registry;
  auto self_removing = std::make_shared<SelfRemovingSession>(registry);
  self_removing->id = registry.add("alice", self_removing);
  auto other = std::make_shared<FakeSession>();
  registry.add("alice", other);
  EXPECT_EQ(registry.deliver("alice", payload("x")), 1u);
  EXPECT_EQ(registry.sessions("alice"), 1u);
}

TEST(SessionRegistry, ConcurrentAttachDeliverAndRemoveStayConsistent) {
  SessionRegistry registry;
  auto steady = std::make_shared<FakeSession>();
  registry.add("alice", steady);
  constexpr int kRounds = 2000;
  std::atomic<bool> done{false};
  std::thread churn([&] {
    for (int i = 0; i < kRounds; ++i) {
      auto s = std::make_shared<FakeSession>();
      const SessionId id = registry.add(i % 2 ? "alice" : "bob", s);
      if (i % 3 == 0) s->close();
      registry.remove(id);
    }
    done = true;
  });
  int delivered = 0;
  while (!done) {
    registry.deliver("alice", payload("s"));
    registry.deliver("bob", payload("s"));
    ++delivered;
  }
  churn.join();
  EXPECT_EQ(static_cast<int>(steady->received().size()), delivered);
  EXPECT_EQ(registry.stats().sessions, 1u);
  EXPECT_EQ(registry.stats().members, 1u);
}

TEST(SessionRegistry, ALateSessionGetsItsMembersLastStatusOnly) {
  SessionRegistry registry;
  registry.deliver("alice", payload("alice: syncing"));
  registry.deliver("alice", payload("alice: synced"));
  registry.deliver("bob", payload("bob: failed"));
  auto alice = std::make_shared<FakeSession>();
  registry.add("alice", alice);
  EXPECT_EQ(texts(*alice), std::vector<std::string>{"alice: synced"});
  auto carol = std::make_shared<FakeSession>();
  registry.add("carol", carol);
  EXPECT_TRUE(texts(*carol).empty()) << "no status for carol yet";
  registry.deliver("alice", payload("alice: synced again"));
  EXPECT_EQ(texts(*alice), (std::vector<std::string>{"alice: synced", "alice: synced again"}));
}

TEST(SessionRegistry, LastStatusesAreBoundedLeastRecentlyUpdatedFirst) {
  SessionRegistry registry(2);
  registry.deliver("alice", payload("a"));
  registry.deliver("bob", payload("b"));
  registry.deliver("alice", payload("a2"));  // alice is now the most recent
  registry.deliver("carol", payload("c"));   // bob is forgotten
  auto alice = std::make_shared<FakeSession>(), bob = std::make_shared<FakeSession>(),
       carol = std::make_shared<FakeSession>();
  registry.add("alice", alice);
  registry.add("bob", bob);
  registry.add("carol", carol);
  EXPECT_EQ(texts(*alice), std::vector<std::string>{"a2"});
  EXPECT_TRUE(texts(*bob).empty());
  EXPECT_EQ(texts(*carol), std::vector<std::string>{"c"});

  SessionRegistry forgetful(0);
  forgetful.deliver("alice", payload("a"));
  auto late = std::make_shared<FakeSession>();
  forgetful.add("alice", late);
  EXPECT_TRUE(texts(*late).empty());
}

TEST(SessionRegistry, AnOlderEventsStatusIsSupersededAndALateSessionGetsTheNewest) {
  SessionRegistry registry;
  auto page = std::make_shared<FakeSession>();
  registry.add("alice", page);
  EXPECT_EQ(registry.deliver("alice", payload("event 3"), 3), 1u);
  EXPECT_EQ(registry.deliver("alice", payload("event 7"), 7), 1u);
  // Event 5's handler was taken over after ack_wait: its status is published last.
  EXPECT_EQ(registry.deliver("alice", payload("event 5"), 5), 0u);
  EXPECT_EQ(registry.deliver("alice", payload("event 7 again"), 7), 0u) << "not newer";
  EXPECT_EQ(registry.deliver("bob", payload("bob 4"), 4), 0u) << "bob's order is his own";
  EXPECT_EQ(texts(*page), (std::vector<std::string>{"event 3", "event 7"}));
  EXPECT_EQ(registry.stats().superseded, 2u);
  auto late = std::make_shared<FakeSession>();
  registry.add("alice", late);
  EXPECT_EQ(texts(*late), std::vector<std::string>{"event 7"}) << "the newest, not the last";
  EXPECT_EQ(registry.deliver("alice", payload("unordered"), 0), 2u) << "0: arrival order";
}

TEST(SessionRegistry, ConcurrentStatusesOfAMemberReachEverySessionInOneIncreasingOrder) {
  SessionRegistry registry;
  auto first = std::make_shared<FakeSession>(), second = std::make_shared<FakeSession>();
  registry.add("alice", first);
  registry.add("alice", second);
  constexpr int kEvents = 4000;
  std::vector<std::thread> handlers;
  for (int t = 0; t < 4; ++t)
    handlers.emplace_back([&, t] {
      for (int e = 1 + t; e <= kEvents; e += 4)
        registry.deliver("alice", payload(std::to_string(e)), static_cast<uint64_t>(e));
    });
  for (auto& h : handlers) h.join();
  for (const auto* session : {first.get(), second.get()}) {
    const auto got = texts(*session);
    ASSERT_FALSE(got.empty());
    for (size_t i = 1; i < got.size(); ++i)
      ASSERT_LT(std::stoi(got[i - 1]), std::stoi(got[i])) << "went back at " << i;
    EXPECT_EQ(got.back(), std::to_string(kEvents));
  }
  EXPECT_EQ(texts(*first), texts(*second)) << "both pages saw the same statuses";
}

}  // namespace
}  // namespace natsfleet::relay
