// The dispatcher's queue: bounded where asked (oldest of the same key gives way), a redelivery
// replaces the waiting copy, probes run next, and stop hands back what never started.
#include "consume/dispatcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "natsfleet/validate.h"
#include "support/address_limit.h"

namespace natsfleet::consume {
namespace {

nats::InboundMessage msg(std::string subject, std::string data) {
  nats::InboundMessage m;
  m.subject = std::move(subject);
  m.data = std::move(data);
  m.reply = "reply." + m.data;
  return m;
}

// Holds the single handler thread on its first message until released, and records the rest.
struct Blocker {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  bool started = false;
  std::vector<std::string> seen;
  std::vector<bool> probes;

  Dispatcher::Process process() {
    return [this](nats::InboundMessage&& m, const Dispatcher::Turn& turn) {
      std::unique_lock lock(mu);
      if (!started) {
        started = true;
        cv.notify_all();
        cv.wait(lock, [&] { return released; });
      }
      seen.push_back(m.data);
      probes.push_back(turn.probe);
      cv.notify_all();
    };
  }
  void wait_started() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return started; });
  }
  void release() {
    std::lock_guard lock(mu);
    released = true;
    cv.notify_all();
  }
  void wait_seen(size_t n) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return seen.size() >= n; });
  }
};

// Held (the connection is down): what runs finishes, nothing waiting starts; released, the
// queue runs in order.
TEST(Dispatcher, WhileHeldNothingWaitingStartsAndReleasedTheQueueRuns) {
  Blocker b;
  Dispatcher d({}, b.process());
  (void)d.submit(msg("jobs", "first"));
  b.wait_started();
  (void)d.submit(msg("jobs", "second"));
  (void)d.submit(msg("jobs", "third"));
  d.hold(true);
  b.release();
  b.wait_seen(1);
  // The handler thread is free now: had it not been held, it would take "second" at once.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  {
    std::lock_guard lock(b.mu);
    EXPECT_EQ(b.seen, std::vector<std::string>{"first"});
  }
  EXPECT_EQ(d.queued(), 2u);
  d.hold(false);
  b.wait_seen(3);
  std::lock_guard lock(b.mu);
  EXPECT_EQ(b.seen, (std::vector<std::string>{"first", "second", "third"}));
}

// A held dispatcher still stops: what waited goes back to be nak'd.
TEST(Dispatcher, AHeldDispatcherStopsAndHandsBackWhatWaited) {
  Blocker b;
  b.release();
  Dispatcher d({}, b.process());
  d.hold(true);
  (void)d.submit(msg("jobs", "a"));
  (void)d.submit(msg("jobs", "b"));
  std::vector<std::string> back;
  EXPECT_TRUE(d.stop(std::chrono::milliseconds(1000),
                     [&](nats::InboundMessage&& m) { back.push_back(m.data); }));
  d.join();
  EXPECT_EQ(back, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(b.seen.empty());
}

TEST(Dispatcher, AFullQueueDropsTheOldestOfTheSameKey) {
  Blocker b;
  Dispatcher::Options options;
  options.max_queued = 3;
  options.key = [](const nats::InboundMessage& m) { return subject_token(m.subject, 2); };
  Dispatcher d(options, b.process());
  (void)d.submit(msg("member.x.status", "first"));
  b.wait_started();
  EXPECT_FALSE(d.submit(msg("member.a.status", "a1")).displaced);
  EXPECT_FALSE(d.submit(msg("member.b.status", "b1")).displaced);
  EXPECT_FALSE(d.submit(msg("member.a.status", "a2")).displaced);
  auto full = d.submit(msg("member.a.status", "a3"));
  ASSERT_TRUE(full.displaced);
  EXPECT_EQ(full.displaced->data, "a1") << "the oldest of key a gives way";
  auto other = d.submit(msg("member.c.status", "c1"));
  ASSERT_TRUE(other.displaced);
  EXPECT_EQ(other.displaced->data, "b1") << "no waiting message of key c: the oldest of all";
  EXPECT_EQ(d.queued(), 3u);
  b.release();
  b.wait_seen(4);
  EXPECT_EQ(b.seen, (std::vector<std::string>{"first", "a2", "a3", "c1"}));
}

TEST(Dispatcher, UnboundedWithoutALimit) {
  Blocker b;
  Dispatcher d(Dispatcher::Options{}, b.process());
  (void)d.submit(msg("s", "first"));
  b.wait_started();
  for (int i = 0; i < 5000; ++i) EXPECT_FALSE(d.submit(msg("s", std::to_string(i))).displaced);
  EXPECT_EQ(d.queued(), 5000u);
  b.release();
  b.wait_seen(5001);
}

TEST(Dispatcher, ARedeliveryReplacesTheWaitingCopyInPlace) {
  Blocker b;
  Dispatcher::Options options;
  options.key = [](const nats::InboundMessage& m) { return m.subject; };
  Dispatcher d(options, b.process());
  (void)d.submit(msg("seq.0", "first"));
  b.wait_started();
  (void)d.submit(msg("seq.1", "one"));
  (void)d.submit(msg("seq.2", "two"));
  auto again = d.submit(msg("seq.1", "one-again"), Dispatcher::Placement::replace);
  ASSERT_TRUE(again.displaced);
  EXPECT_EQ(again.displaced->data, "one");
  auto fresh = d.submit(msg("seq.3", "three"), Dispatcher::Placement::replace);
  EXPECT_FALSE(fresh.displaced) << "nothing waiting with that key: queued at the back";
  EXPECT_EQ(d.queued(), 3u);
  b.release();
  b.wait_seen(4);
  EXPECT_EQ(b.seen, (std::vector<std::string>{"first", "one-again", "two", "three"}));
}

TEST(Dispatcher, AProbeRunsNextAndIsMarked) {
  Blocker b;
  Dispatcher d(Dispatcher::Options{}, b.process());
  (void)d.submit(msg("s", "first"));
  b.wait_started();
  (void)d.submit(msg("s", "waiting"));
  (void)d.submit(msg("s", "older"), Dispatcher::Placement::front);
  (void)d.submit(msg("s", "probe"), Dispatcher::Placement::probe);
  b.release();
  b.wait_seen(4);
  EXPECT_EQ(b.seen, (std::vector<std::string>{"first", "probe", "older", "waiting"}));
  EXPECT_EQ(b.probes, (std::vector<bool>{false, true, false, false}));
}

TEST(Dispatcher, StopHandsBackWhatNeverStartedAndRefusesMore) {
  Blocker b;
  Dispatcher d(Dispatcher::Options{}, b.process());
  (void)d.submit(msg("s", "first"));
  b.wait_started();
  (void)d.submit(msg("s", "queued"));
  std::vector<std::string> rejected;
  EXPECT_FALSE(d.stop(std::chrono::milliseconds(10), [&](nats::InboundMessage&& m) {
    rejected.push_back(m.data);
  })) << "the first handler overran";
  EXPECT_EQ(rejected, std::vector<std::string>{"queued"});
  EXPECT_TRUE(d.submit(msg("s", "late")).refused);
  b.release();
  d.join();  // waits for the overrunning handler instead of leaving it to run on freed state
  EXPECT_EQ(b.seen, std::vector<std::string>{"first"});
}

// A handler thread the system refuses is an exception the caller can catch (the fleet turns it
// into a start-up error), with the threads already started ended: never std::terminate.
TEST(Dispatcher, ThreadsTheSystemRefusesAreAnErrorNotAnAbort) {
  if (!natsfleet::testing::kAddressLimitWorks) GTEST_SKIP() << "not under the sanitizers";
  const int code = natsfleet::testing::run_with_few_threads([] {
    try {
      Dispatcher d({.concurrency = 1024}, [](nats::InboundMessage&&, const Dispatcher::Turn&) {});
      return 1;  // all 1024 started: the limit did not bite
    } catch (const std::system_error& e) {
      const std::string what = e.what();
      return what.find("cannot start handler thread") != std::string::npos &&
                     what.find("of 1024") != std::string::npos
                 ? 0
                 : 2;
    }
  });
  EXPECT_EQ(code, 0) << "1: the limit did not bite; 2: the wrong message; 134: it aborted";
}

// Waiting and running messages are owed an in-progress ack once `every` has passed since they
// arrived or were last kept alive; past `limit` a waiting one is handed back and a running one
// reported once and kept alive no more. A message not kept alive for `stale_after` (its owner
// was paused) is left alone, and its handler sees when it was last kept alive.
TEST(Dispatcher, KeepAliveCoversWaitingAndRunningMessagesUpToTheLimit) {
  using namespace std::chrono_literals;
  std::vector<Dispatcher::Clock::time_point> kept_alive;
  Blocker b;
  auto process = b.process();
  Dispatcher d(Dispatcher::Options{}, [&](nats::InboundMessage&& m, const Dispatcher::Turn& turn) {
    kept_alive.push_back(m.kept_alive);
    process(std::move(m), turn);
  });
  (void)d.submit(msg("s", "first"));
  b.wait_started();
  (void)d.submit(msg("s", "waiting"));
  // Handed back from a hold whose last in-progress ack went out 10 s ago.
  auto probe = msg("s", "probe");
  probe.kept_alive = Dispatcher::Clock::now() - 10s;
  (void)d.submit(std::move(probe), Dispatcher::Placement::probe);
  const auto base = Dispatcher::Clock::now();
  const auto every = 10s;
  const auto limit = 60s;
  const auto stale_after = 30s;

  auto k = d.keep_alive(base + 1s, every, limit, stale_after);
  EXPECT_EQ(k.due, std::vector<std::string>{"reply.probe"});
  EXPECT_TRUE(k.expired.empty());

  k = d.keep_alive(base + 11s, every, limit, stale_after);
  EXPECT_EQ(k.due, (std::vector<std::string>{"reply.probe", "reply.waiting", "reply.first"}));
  EXPECT_TRUE(d.keep_alive(base + 15s, every, limit, stale_after).due.empty())
      << "kept alive at 11 s";

  k = d.keep_alive(base + 61s, every, limit);
  ASSERT_EQ(k.expired.size(), 1u);
  EXPECT_EQ(k.expired[0].data, "waiting") << "waited past the limit: handed back";
  EXPECT_EQ(k.due, std::vector<std::string>{"reply.probe"}) << "a probe is never handed back";
  EXPECT_EQ(k.overran, std::vector<std::string>{"reply.first"});

  k = d.keep_alive(base + 75s, every, limit, stale_after);
  EXPECT_TRUE(k.overran.empty()) << "reported once";
  EXPECT_EQ(k.due, std::vector<std::string>{"reply.probe"})
      << "and the hung handler's message is left to expire";

  // 40 s without a keep-alive (a pause): stale, so neither kept alive nor handed back.
  k = d.keep_alive(base + 115s, every, limit + 100s, stale_after);
  EXPECT_TRUE(k.due.empty());
  EXPECT_TRUE(k.expired.empty());
  EXPECT_EQ(d.queued(), 1u);
  b.release();
  b.wait_seen(2);
  EXPECT_EQ(b.seen, (std::vector<std::string>{"first", "probe"}));
  ASSERT_EQ(kept_alive.size(), 2u);
  EXPECT_EQ(kept_alive[1], base + 75s) << "the handler sees its last keep-alive";
}

TEST(Dispatcher, ArrivalAndStartAreStampedOnTheInjectedClock) {
  using namespace std::chrono_literals;
  base::ManualClock clock;
  const auto t0 = clock.now();
  Dispatcher::Options options;
  options.clock = &clock;
  Blocker b;
  Dispatcher d(options, b.process());
  (void)d.submit(msg("s", "first"));
  b.wait_started();
  (void)d.submit(msg("s", "waiting"));
  // Both stamped at t0 on the test's clock, whatever the real time.
  EXPECT_TRUE(d.keep_alive(t0 + 9s, 10s, 60s).due.empty());
  EXPECT_EQ(d.keep_alive(t0 + 10s, 10s, 60s).due,
            (std::vector<std::string>{"reply.waiting", "reply.first"}));
  auto late = d.keep_alive(t0 + 60s, 10s, 60s);
  EXPECT_EQ(late.overran, std::vector<std::string>{"reply.first"});
  ASSERT_EQ(late.expired.size(), 1u);
  EXPECT_EQ(late.expired[0].data, "waiting");
  b.release();
  b.wait_seen(1);
}

// An intake the handler threads read (Options::feed): bursts the test puts in it, read by one
// thread at a time, which waits up to the read's time for one to come.
struct ScriptedInbox {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<nats::InboundMessage>> bursts;
  Dispatcher* dispatcher = nullptr;  // set once constructed; reads before that find nothing
  int readers = 0;
  int most_readers = 0;
  std::map<std::thread::id, int> reads_by_thread;

  bool read(std::chrono::milliseconds wait) {
    std::unique_lock lock(mu);
    most_readers = std::max(most_readers, ++readers);
    cv.wait_for(lock, wait, [&] { return dispatcher && !bursts.empty(); });
    std::vector<nats::InboundMessage> burst;
    if (dispatcher && !bursts.empty()) {
      burst = std::move(bursts.front());
      bursts.erase(bursts.begin());
      ++reads_by_thread[std::this_thread::get_id()];
    }
    --readers;
    Dispatcher* d = dispatcher;
    lock.unlock();
    if (d && !burst.empty()) d->submit_all(burst);
    return true;
  }
  void put(std::vector<nats::InboundMessage> burst) {
    std::lock_guard lock(mu);
    bursts.push_back(std::move(burst));
    cv.notify_all();
  }
  void attach(Dispatcher& d) {
    std::lock_guard lock(mu);
    dispatcher = &d;
    cv.notify_all();
  }
};

TEST(Dispatcher, AnIdleHandlerThreadReadsTheIntakeAndRunsWhatItRead) {
  ScriptedInbox inbox;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> seen;
  std::vector<std::thread::id> ran_on;
  Dispatcher::Options options;
  options.feed = [&](std::chrono::milliseconds wait) { return inbox.read(wait); };
  options.feed_wait = std::chrono::milliseconds(20);
  Dispatcher d(options, [&](nats::InboundMessage&& m, const Dispatcher::Turn&) {
    std::lock_guard lock(mu);
    seen.push_back(m.data);
    ran_on.push_back(std::this_thread::get_id());
    cv.notify_all();
  });
  inbox.attach(d);
  inbox.put({msg("s", "1"), msg("s", "2")});
  inbox.put({msg("s", "3")});
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return seen.size() == 3; });
  }
  (void)d.submit(msg("s", "handed back"), Dispatcher::Placement::front);  // while it reads
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return seen.size() == 4; });
  EXPECT_EQ(seen, (std::vector<std::string>{"1", "2", "3", "handed back"}));
  ASSERT_EQ(inbox.reads_by_thread.size(), 1u);
  EXPECT_EQ(inbox.reads_by_thread.begin()->first, ran_on.front()) << "no hand-off to another";
}

TEST(Dispatcher, OneHandlerThreadReadsAtATime) {
  ScriptedInbox inbox;
  std::mutex mu;
  std::condition_variable cv;
  size_t handled = 0;
  Dispatcher::Options options;
  options.concurrency = 4;
  options.feed = [&](std::chrono::milliseconds wait) { return inbox.read(wait); };
  options.feed_wait = std::chrono::milliseconds(5);
  Dispatcher d(options, [&](nats::InboundMessage&&, const Dispatcher::Turn&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // keeps the others busy
    std::lock_guard lock(mu);
    ++handled;
    cv.notify_all();
  });
  inbox.attach(d);
  for (int i = 0; i < 20; ++i) inbox.put({msg("s", "a"), msg("s", "b"), msg("s", "c")});
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return handled == 60; });
  std::lock_guard inbox_lock(inbox.mu);
  EXPECT_EQ(inbox.most_readers, 1);
}

TEST(Dispatcher, StopEndsTheReadsAndHandsBackWhatWasReadTooLate) {
  ScriptedInbox inbox;
  Dispatcher::Options options;
  options.feed = [&](std::chrono::milliseconds wait) { return inbox.read(wait); };
  options.feed_wait = std::chrono::milliseconds(5);
  Dispatcher d(options, [](nats::InboundMessage&&, const Dispatcher::Turn&) {});
  inbox.attach(d);
  EXPECT_TRUE(d.stop(std::chrono::milliseconds(1000), nullptr));
  d.join();  // returns: the thread that was reading saw the stop
  std::vector<nats::InboundMessage> late{msg("s", "late")};
  d.submit_all(late);
  EXPECT_EQ(late.size(), 1u) << "left for the caller to nak";
}

}  // namespace
}  // namespace natsfleet::consume
