// nats::Connection's batched subscriptions on a real broker: what nats.c has queued is handed
// over together, in order, within the bounds; a message with nothing behind it is handed over at
// once, never held for a next one. Polled subscriptions: read in order within the same bounds,
// stamped no later than they came, woken by close().
#include "nats/connection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nats/jetstream_api.h"
#include "support/nats_server.h"
#include "support/wait_for.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<nats::Connection> connect(const NatsServer& server) {
  auto conn = nats::Connection::open({.servers = {server.url()}, .name = "connection-test"}, {});
  EXPECT_TRUE(conn) << conn.error().describe();
  EXPECT_TRUE(wait_for([&] { return conn.value()->connected(); }, 10s));
  return std::move(conn.value());
}

// Records every batch; the first callback blocks until release(), so that what is published
// meanwhile queues up in nats.c.
class BatchRecorder {
 public:
  void on_batch(std::vector<nats::InboundMessage>& batch) {
    std::unique_lock lock(mu_);
    sizes_.push_back(batch.size());
    for (auto& m : batch) {
      seen_.push_back(std::move(m.data));
    }
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
  }
  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  size_t count() {
    std::lock_guard lock(mu_);
    return seen_.size();
  }
  std::vector<std::string> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  std::vector<size_t> sizes() {
    std::lock_guard lock(mu_);
    return sizes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::vector<std::string> seen_;
  std::vector<size_t> sizes_;
};

TEST(ConnectionBatches, WhatQueuedMeanwhileArrivesTogetherInOrderWithinTheCount) {
  NatsServer server;
  auto conn = connect(server);
  BatchRecorder recorder;
  auto sub = conn->subscribe_batches(
      "batch.count", "", [&](std::vector<nats::InboundMessage>& b) { recorder.on_batch(b); });
  ASSERT_TRUE(sub) << sub.error().describe();
  ASSERT_TRUE(conn->flush(5s));

  constexpr int kMessages = 1000;
  ASSERT_TRUE(conn->publish("batch.count", "0"));
  ASSERT_TRUE(wait_for([&] { return recorder.count() == 1; }, 10s));
  // The callback is blocked: these queue up in nats.c behind it.
  for (int i = 1; i < kMessages; ++i) ASSERT_TRUE(conn->publish("batch.count", std::to_string(i)));
  ASSERT_TRUE(conn->flush(5s));
  recorder.release();
  ASSERT_TRUE(wait_for([&] { return recorder.count() == kMessages; }, 10s)) << recorder.count();

  const auto seen = recorder.seen();
  for (int i = 0; i < kMessages; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)], std::to_string(i));
  const auto sizes = recorder.sizes();
  EXPECT_EQ(sizes.front(), 1u);
  size_t largest = 0;
  for (size_t n : sizes) {
    EXPECT_LE(n, nats::Connection::kMaxBatch);
    largest = std::max(largest, n);
  }
  // 999 messages queued behind one callback: they come in full batches, not one at a time.
  EXPECT_EQ(largest, nats::Connection::kMaxBatch);
  EXPECT_LT(sizes.size(), 1u + (kMessages - 1) / 16);
}

TEST(ConnectionBatches, ABatchStopsAtTheByteBound) {
  NatsServer server;
  auto conn = connect(server);
  BatchRecorder recorder;
  auto sub = conn->subscribe_batches(
      "batch.bytes", "", [&](std::vector<nats::InboundMessage>& b) { recorder.on_batch(b); });
  ASSERT_TRUE(sub) << sub.error().describe();
  ASSERT_TRUE(conn->flush(5s));

  const std::string big(100 * 1024, 'x');
  ASSERT_TRUE(conn->publish("batch.bytes", big));
  ASSERT_TRUE(wait_for([&] { return recorder.count() == 1; }, 10s));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(conn->publish("batch.bytes", big));
  ASSERT_TRUE(conn->flush(5s));
  recorder.release();
  ASSERT_TRUE(wait_for([&] { return recorder.count() == 21; }, 10s)) << recorder.count();
  // 100 KiB each: the third reaches 256 KiB and closes its batch.
  for (size_t n : recorder.sizes()) EXPECT_LE(n, 3u);
}

TEST(ConnectionBatches, AMessageWithNothingBehindItIsHandedOverAtOnce) {
  NatsServer server;
  auto conn = connect(server);
  std::atomic<int> got{0};
  auto sub = conn->subscribe_batches("batch.alone", "", [&](std::vector<nats::InboundMessage>& b) {
    got += static_cast<int>(b.size());
  });
  ASSERT_TRUE(sub) << sub.error().describe();
  ASSERT_TRUE(conn->flush(5s));
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(conn->publish("batch.alone", "one"));
    // Nothing follows it: held for a next message, it would never arrive.
    EXPECT_TRUE(wait_for([&] { return got.load() == i; }, 10s)) << "message " << i;
  }
}

TEST(ConnectionBatches, ThePerMessageFormSeesEveryMessageInOrder) {
  NatsServer server;
  auto conn = connect(server);
  std::mutex mu;
  std::vector<std::string> seen;
  auto sub = conn->subscribe("batch.each", "", [&](nats::InboundMessage&& m) {
    std::lock_guard lock(mu);
    seen.push_back(std::move(m.data));
  });
  ASSERT_TRUE(sub) << sub.error().describe();
  ASSERT_TRUE(conn->flush(5s));
  for (int i = 0; i < 500; ++i) ASSERT_TRUE(conn->publish("batch.each", std::to_string(i)));
  ASSERT_TRUE(wait_for(
      [&] {
        std::lock_guard lock(mu);
        return seen.size() == 500;
      },
      10s));
  std::lock_guard lock(mu);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], std::to_string(i));
}

// nats.c 3.4 (Debian 12's) looks a subscription up for an inbound message, lets go of the lock
// that guards the lookup, copies the message, then locks the subscription: one freed meanwhile
// aborts the process (nats.c #637, fixed in 3.6). Dropped while large messages pour in, each
// subscription here is freed only once the reader has passed every message sent before its
// unsubscribe.
TEST(ConnectionSubscriptions, DroppedWhileLargeMessagesPourInTheyNeverCrashTheReader) {
  NatsServer server;
  auto publisher = connect(server);
  auto conn = connect(server);
  std::atomic<bool> stop{false};
  std::thread pour([&] {
    const std::string payload(256 * 1024, 'x');
    while (!stop.load()) (void)publisher->publish("churn.x", payload);
  });
  constexpr int kRounds = 300;
  int heard_in = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::atomic<int> got{0};
    auto sub = conn->subscribe("churn.x", "", [&](nats::InboundMessage&&) { ++got; });
    ASSERT_TRUE(sub) << sub.error().describe();
    if (wait_for([&] { return got.load() > 0; }, 2s)) ++heard_in;
  }
  stop = true;
  pour.join();
  EXPECT_GT(heard_in, kRounds / 2) << "messages were pouring in while subscriptions were dropped";
  std::atomic<int> got{0};
  auto sub = conn->subscribe("churn.after", "", [&](nats::InboundMessage&&) { ++got; });
  ASSERT_TRUE(sub) << sub.error().describe();
  ASSERT_TRUE(conn->flush(5s));
  ASSERT_TRUE(publisher->publish("churn.after", "still here"));
  EXPECT_TRUE(wait_for([&] { return got.load() == 1; }, 10s));
}

// A polled subscription on `subject`, listening once it returns.
std::unique_ptr<nats::PolledSubscription> listen_polled(nats::Connection& conn,
                                                        const std::string& subject) {
  auto sub = conn.subscribe_polled(subject);
  EXPECT_TRUE(sub) << sub.error().describe();
  EXPECT_TRUE(conn.flush(5s));
  return sub ? std::move(*sub) : nullptr;
}

TEST(ConnectionPolled, WhatWaitsIsReadInOrderWithinTheCountStampedWhenLastSeenEmpty) {
  NatsServer server;
  auto conn = connect(server);
  auto sub = listen_polled(*conn, "polled.count");
  ASSERT_TRUE(sub);
  std::vector<nats::InboundMessage> out;
  ASSERT_TRUE(sub->read(out, 0ms));
  EXPECT_TRUE(out.empty());
  const auto seen_empty = std::chrono::steady_clock::now();
  constexpr int kMessages = 100;
  for (int i = 0; i < kMessages; ++i) ASSERT_TRUE(conn->publish("polled.count", std::to_string(i)));
  ASSERT_TRUE(conn->flush(5s));  // its PONG comes after every message: all are queued now
  ASSERT_TRUE(sub->read(out, 0ms));
  ASSERT_EQ(out.size(), nats::Connection::kMaxBatch);
  ASSERT_TRUE(sub->read(out, 0ms));
  ASSERT_EQ(out.size(), static_cast<size_t>(kMessages));
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_EQ(out[static_cast<size_t>(i)].data, std::to_string(i));
    // They waited unread since the queue was last seen empty: their ack_wait may have run as
    // long, so they are stamped then, not when read.
    EXPECT_LE(out[static_cast<size_t>(i)].received, seen_empty) << i;
  }
}

TEST(ConnectionPolled, AReadWaitsForTheFirstMessageAndCloseEndsIt) {
  NatsServer server;
  auto conn = connect(server);
  auto sub = listen_polled(*conn, "polled.wait");
  ASSERT_TRUE(sub);
  std::vector<nats::InboundMessage> out;
  std::thread reader([&] { EXPECT_TRUE(sub->read(out, 60s)); });
  ASSERT_TRUE(conn->publish("polled.wait", "first"));
  reader.join();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data, "first");
  EXPECT_NE(out[0].received, std::chrono::steady_clock::time_point{});

  bool open = true;
  std::thread waiting([&] { open = sub->read(out, 60s); });
  sub->close();
  waiting.join();  // returns long before 60 s: close() wakes it
  EXPECT_FALSE(open);
}

TEST(ConnectionPolled, ARequestNobodyAnswersReadsAsStatus503) {
  NatsServer server;
  auto conn = connect(server);
  auto sub = listen_polled(*conn, "polled.replies");
  ASSERT_TRUE(sub);
  ASSERT_TRUE(conn->publish("nobody.listens", "?", "polled.replies"));
  std::vector<nats::InboundMessage> out;
  ASSERT_TRUE(sub->read(out, 10s));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].status, 503);
}

// A stored publish nobody answers is not "no stream holds it": the stream may have no leader at
// the moment (a lease bucket during an election), so the error says both.
TEST(ConnectionPolled, AStoredPublishNobodyAnswersSaysNoStreamAnswered) {
  NatsServer server;
  auto conn = connect(server);
  nats::JetStreamApi api(*conn, 2s);
  auto stored = api.publish("nobody.stores", "?", {});
  ASSERT_FALSE(stored);
  EXPECT_EQ(stored.error().code, Errc::no_responders) << stored.error().describe();
  EXPECT_NE(stored.error().describe().find(
                "no stream answered for nobody.stores (none holds it, or the one that does has no "
                "leader now)"),
            std::string::npos)
      << stored.error().describe();
}

}  // namespace
}  // namespace natsfleet::testing
