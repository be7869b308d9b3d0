// The pull engine's rules on a scripted broker and simulated time: what it asks for and on which
// inbox, what it delivers, what a status does, and what happens after a gap, a step back, a
// disconnect or a stop. Real-broker tests cover the timing against nats-server.
#include "consume/pull_engine.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>

namespace natsfleet::consume {
namespace {

using namespace std::chrono_literals;

// Plays the broker: hands out inboxes, records the pulls, and queues what the test tells it to
// the inbox it names, for the engine to read (`reader`, set by the test). A burst can be read
// while something else happens (send_while), as when the engine lets go of an inbox under a
// read.
class ScriptedBroker final : public InboxLink {
 public:
  struct Pull {
    std::string subject;
    std::string reply;
    int64_t batch = 0;
    int64_t expires_ms = 0;
    int64_t heartbeat_ms = 0;
  };

  std::string new_inbox() override { return "_INBOX." + std::to_string(++inboxes_); }
  Result<std::unique_ptr<Listening>> listen(const std::string& inbox) override {
    listening_[inbox] = true;
    return std::unique_ptr<Listening>(std::make_unique<Interest>(*this, inbox));
  }
  bool connected() const override { return connected_; }
  Result<void> publish(const std::string& subject, const std::string& body,
                       const std::string& reply) override {
    const auto json = nlohmann::json::parse(body);
    pulls.push_back({subject, reply, json.at("batch").get<int64_t>(),
                     json.at("expires").get<int64_t>() / 1'000'000,
                     json.at("idle_heartbeat").get<int64_t>() / 1'000'000});
    return {};
  }

  // Sends `burst` to `inbox` and has it read, if something listens there; false if nothing does.
  bool send(const std::string& inbox, std::vector<nats::InboundMessage> burst) {
    if (!listening(inbox)) return false;
    queued_[inbox].push_back({std::move(burst), nullptr});
    reader();
    return true;
  }
  // Sends `burst` to `inbox` and has it read; `during` runs inside that read, after the burst
  // was taken from the inbox.
  void send_while(const std::string& inbox, std::vector<nats::InboundMessage> burst,
                  std::function<void()> during) {
    queued_[inbox].push_back({std::move(burst), std::move(during)});
    reader();
  }
  bool listening(const std::string& inbox) const {
    auto it = listening_.find(inbox);
    return it != listening_.end() && it->second;
  }
  const Pull& last_pull() const { return pulls.back(); }

  std::vector<Pull> pulls;
  bool connected_ = true;
  std::function<void()> reader;

 private:
  struct Burst {
    std::vector<nats::InboundMessage> messages;
    std::function<void()> during;
  };
  class Interest final : public Listening {
   public:
    Interest(ScriptedBroker& broker, std::string inbox) : broker_(broker), inbox_(inbox) {}
    ~Interest() override { close(); }
    bool read(std::vector<nats::InboundMessage>& out, std::chrono::milliseconds) override {
      auto& queue = broker_.queued_[inbox_];
      if (!queue.empty()) {
        Burst burst = std::move(queue.front());
        queue.erase(queue.begin());
        if (burst.during) burst.during();
        for (auto& m : burst.messages) out.push_back(std::move(m));
      }
      return true;
    }
    void close() override { broker_.listening_[inbox_] = false; }

   private:
    ScriptedBroker& broker_;
    std::string inbox_;
  };

  int inboxes_ = 0;
  std::map<std::string, bool> listening_;
  std::map<std::string, std::vector<Burst>> queued_;
};

nats::InboundMessage message(int n) {
  nats::InboundMessage m;
  m.subject = "orders." + std::to_string(n);
  m.reply = "$JS.ACK.S.C.1." + std::to_string(n) + "." + std::to_string(n) + ".0.0";
  m.data = "m" + std::to_string(n);
  return m;
}

nats::InboundMessage status(int code, std::string description, uint64_t pending = 0) {
  nats::InboundMessage m;
  m.status = code;
  m.description = std::move(description);
  if (pending > 0) m.headers["Nats-Pending-Messages"] = {std::to_string(pending)};
  return m;
}

std::vector<nats::InboundMessage> messages(int from, int to) {
  std::vector<nats::InboundMessage> out;
  for (int n = from; n <= to; ++n) out.push_back(message(n));
  return out;
}

class PullEngineTest : public ::testing::Test {
 protected:
  // An engine on the scripted broker: window 8, heartbeat 1 s, expiry 30 s; a gap after 15 s
  // of silence when ack_wait is 30 s, none when it is 0.
  void make(std::chrono::milliseconds ack_wait = 30s, int window = 8) {
    auto link = std::make_unique<ScriptedBroker>();
    broker_ = link.get();
    engine_ = std::make_unique<PullEngine>(
        std::move(link),
        PullEngine::Options{.stream = "S",
                            .consumer = "C",
                            .batch = window,
                            .expires = 30s,
                            .heartbeat = 1s,
                            .ack_wait = ack_wait,
                            .clock = &clock_,
                            .owner_reads = true},
        [this](std::vector<nats::InboundMessage>& batch) {
          for (auto& m : batch) delivered_.push_back(std::move(m.data));
        },
        [this](const PullStatus& s) { signals_.push_back(s.signal); });
    broker_->reader = [this] { engine_->read(0ms); };
  }
  void start() { ASSERT_TRUE(engine_->start()); }
  std::string inbox() const { return broker_->last_pull().reply; }
  void finish(int n) {
    for (int i = 0; i < n; ++i) engine_->message_done();
  }

  base::ManualClock clock_;
  ScriptedBroker* broker_ = nullptr;
  std::unique_ptr<PullEngine> engine_;
  std::vector<std::string> delivered_;
  std::vector<PullSignal> signals_;
};

TEST_F(PullEngineTest, StartListensOnAFreshInboxAndAsksForTheWholeWindow) {
  make();
  start();
  ASSERT_EQ(broker_->pulls.size(), 1u);
  const auto& pull = broker_->last_pull();
  EXPECT_EQ(pull.subject, "$JS.API.CONSUMER.MSG.NEXT.S.C");
  EXPECT_EQ(pull.batch, 8);
  EXPECT_EQ(pull.expires_ms, 30'000);
  EXPECT_EQ(pull.heartbeat_ms, 1'000);
  EXPECT_TRUE(broker_->listening(pull.reply));
  EXPECT_EQ(engine_->outstanding(), 8);
}

TEST_F(PullEngineTest, AnExpiryShorterThanThreeHeartbeatsIsRaisedForTheBroker) {
  auto link = std::make_unique<ScriptedBroker>();
  ScriptedBroker& broker = *link;
  PullEngine engine(
      std::move(link),
      {.stream = "S", .consumer = "C", .expires = 2s, .heartbeat = 1s, .clock = &clock_},
      [](std::vector<nats::InboundMessage>&) {}, [](const PullStatus&) {});
  ASSERT_TRUE(engine.start());
  EXPECT_EQ(broker.last_pull().expires_ms, 3'000);
}

TEST_F(PullEngineTest, MessagesAreDeliveredInOrderAndStatusesAreNot) {
  make();
  start();
  ASSERT_TRUE(
      broker_->send(inbox(), {message(1), status(100, "Idle Heartbeat"), message(2), message(3)}));
  EXPECT_EQ(delivered_, (std::vector<std::string>{"m1", "m2", "m3"}));
  EXPECT_TRUE(signals_.empty()) << "a heartbeat is the engine's own business";
  EXPECT_EQ(engine_->outstanding(), 5);
  EXPECT_EQ(engine_->buffered(), 3);
}

TEST_F(PullEngineTest, OnceHalfTheWindowIsDoneTheFreeHalfIsAskedFor) {
  make();
  start();
  ASSERT_TRUE(broker_->send(inbox(), messages(1, 8)));
  finish(3);
  EXPECT_EQ(broker_->pulls.size(), 1u) << "5 in hand: more than half the window";
  finish(1);
  ASSERT_EQ(broker_->pulls.size(), 2u);
  EXPECT_EQ(broker_->last_pull().batch, 4);
  EXPECT_EQ(broker_->last_pull().reply, broker_->pulls.front().reply) << "the same inbox";
}

TEST_F(PullEngineTest, WhatAnExpiredRequestLeftUnfilledIsAskedForAgain) {
  make();
  start();
  ASSERT_TRUE(broker_->send(inbox(), {status(408, "Request Timeout", 8)}));
  ASSERT_EQ(broker_->pulls.size(), 2u);
  EXPECT_EQ(broker_->last_pull().batch, 8);
  EXPECT_TRUE(signals_.empty());
}

TEST_F(PullEngineTest, StatusesTheEngineCannotSettleAreSignalledToItsOwner) {
  make();
  start();
  ASSERT_TRUE(
      broker_->send(inbox(), {status(409, "Consumer Deleted"), status(409, "Leadership Change"),
                              status(409, "Exceeded MaxWaiting"), status(503, "")}));
  EXPECT_EQ(signals_,
            (std::vector<PullSignal>{PullSignal::consumer_deleted, PullSignal::leadership_change,
                                     PullSignal::max_waiting, PullSignal::no_responders}));
  EXPECT_TRUE(delivered_.empty());
}

TEST_F(PullEngineTest, AMessageOrAHeartbeatIsServiceButNoRespondersIsNot) {
  make();
  start();
  EXPECT_EQ(engine_->last_served(), base::Clock::time_point{}) << "nothing heard yet";
  clock_.advance(1s);
  ASSERT_TRUE(broker_->send(inbox(), {status(100, "Idle Heartbeat")}));
  const auto heard = clock_.now();
  EXPECT_EQ(engine_->last_served(), heard);
  clock_.advance(1s);
  ASSERT_TRUE(broker_->send(inbox(), {status(503, "")}));
  EXPECT_EQ(engine_->last_served(), heard) << "nobody serves the consumer";
  clock_.advance(1s);
  ASSERT_TRUE(broker_->send(inbox(), {message(1)}));
  EXPECT_EQ(engine_->last_served(), clock_.now());
}

TEST_F(PullEngineTest, SilentForTwoHeartbeatsWithRequestsOutIsAMissedHeartbeat) {
  make(0ms);
  start();
  clock_.advance(2s);
  EXPECT_FALSE(engine_->heartbeat_missed()) << "exactly two heartbeats is not yet missed";
  clock_.advance(1ms);
  EXPECT_TRUE(engine_->heartbeat_missed());
  ASSERT_TRUE(broker_->send(inbox(), {status(100, "Idle Heartbeat")}));
  EXPECT_FALSE(engine_->heartbeat_missed()) << "a heartbeat heard";
}

TEST_F(PullEngineTest, AfterAGapWhatArrivesIsDroppedAndPullsStartAfreshOnANewInbox) {
  make();  // ack_wait 30 s: a gap is 15 s of silence
  start();
  const std::string old_inbox = inbox();
  clock_.advance(15s);
  ASSERT_TRUE(broker_->send(old_inbox, {message(1), message(2)}));
  EXPECT_TRUE(delivered_.empty()) << "sent before the gap: likely handed to another replica";
  EXPECT_EQ(engine_->stale_dropped(), 2u);
  EXPECT_EQ(engine_->gaps(), 1u);
  engine_->message_done();
  EXPECT_EQ(broker_->pulls.size(), 1u) << "no pull for an inbox about to be replaced";

  engine_->tick();
  EXPECT_FALSE(broker_->listening(old_inbox));
  ASSERT_EQ(broker_->pulls.size(), 2u);
  EXPECT_NE(inbox(), old_inbox);
  EXPECT_EQ(broker_->last_pull().batch, 8);
  ASSERT_TRUE(broker_->send(inbox(), {message(3)}));
  EXPECT_EQ(delivered_, (std::vector<std::string>{"m3"}));
}

TEST_F(PullEngineTest, ABurstFromAReplacedInboxIsNeverDelivered) {
  make();
  start();
  const std::string old_inbox = inbox();
  broker_->send_while(old_inbox, {message(1)}, [&] {
    clock_.advance(16s);
    engine_->tick();  // the gap replaces the inbox under the read
  });
  ASSERT_NE(inbox(), old_inbox);
  EXPECT_FALSE(broker_->listening(old_inbox));
  EXPECT_TRUE(delivered_.empty());
  EXPECT_EQ(engine_->stale_dropped(), 1u);
}

TEST_F(PullEngineTest, RequestsTheBrokerNeverAnsweredExpireAndArePulledAgain) {
  make(0ms);  // no gap rule: only the expiry frees the window
  start();
  clock_.advance(31s);  // expires + one heartbeat
  engine_->tick();
  EXPECT_EQ(broker_->pulls.size(), 1u) << "a request may still be alive";
  clock_.advance(1ms);
  engine_->tick();
  ASSERT_EQ(broker_->pulls.size(), 2u);
  EXPECT_EQ(broker_->last_pull().batch, 8);
}

TEST_F(PullEngineTest, WhileDisconnectedNoPullIsSentAndARestartAsksAfresh) {
  make();
  broker_->connected_ = false;
  start();
  EXPECT_TRUE(broker_->pulls.empty()) << "nats.c would send it later, maybe for a dead inbox";
  EXPECT_EQ(engine_->outstanding(), 0);
  broker_->connected_ = true;
  engine_->restart_pulls();
  ASSERT_EQ(broker_->pulls.size(), 1u);
  EXPECT_EQ(broker_->last_pull().batch, 8);
}

TEST_F(PullEngineTest, ARestartForgetsWhatWasAskedForAndAsksForTheWindowAgain) {
  make();
  start();
  ASSERT_TRUE(broker_->send(inbox(), messages(1, 2)));
  engine_->restart_pulls();  // a reconnect or a new leader: the waiting requests may be gone
  ASSERT_EQ(broker_->pulls.size(), 2u);
  EXPECT_EQ(broker_->last_pull().batch, 6) << "8 less the 2 in hand";
  EXPECT_EQ(broker_->last_pull().reply, broker_->pulls.front().reply)
      << "no gap: the inbox is kept";
}

TEST_F(PullEngineTest, ARestartAfterAGapLongSilenceReplacesTheInbox) {
  make();
  start();
  const std::string old_inbox = inbox();
  clock_.advance(20s);
  engine_->restart_pulls();
  EXPECT_FALSE(broker_->listening(old_inbox));
  ASSERT_EQ(broker_->pulls.size(), 2u);
  EXPECT_NE(inbox(), old_inbox);
}

TEST_F(PullEngineTest, SteppedBackItPullsNothingAndItsWaitingRequestsLoseTheirListener) {
  make();
  start();
  const std::string old_inbox = inbox();
  ASSERT_TRUE(broker_->send(old_inbox, messages(1, 8)));
  engine_->step_back(true);
  EXPECT_FALSE(broker_->listening(old_inbox)) << "the waiting requests get no listener";
  finish(8);
  EXPECT_EQ(broker_->pulls.size(), 1u);
  engine_->step_back(false);
  ASSERT_EQ(broker_->pulls.size(), 2u);
  EXPECT_NE(inbox(), old_inbox);
  EXPECT_TRUE(broker_->listening(inbox()));
}

TEST_F(PullEngineTest, HeldBackItAsksForAtMostTwo) {
  make();
  start();
  ASSERT_TRUE(broker_->send(inbox(), messages(1, 8)));
  engine_->hold_back(true);
  finish(8);
  ASSERT_GT(broker_->pulls.size(), 1u);
  for (size_t i = 1; i < broker_->pulls.size(); ++i) EXPECT_LE(broker_->pulls[i].batch, 2);
  EXPECT_EQ(engine_->outstanding() + engine_->buffered(), 2);
  const size_t held_pulls = broker_->pulls.size();
  engine_->hold_back(false);
  ASSERT_EQ(broker_->pulls.size(), held_pulls + 1);
  EXPECT_EQ(broker_->last_pull().batch, 6);
}

TEST_F(PullEngineTest, AfterStopPullingWhatIsOnItsWayIsStillDelivered) {
  make();
  start();
  engine_->stop_pulling();
  ASSERT_TRUE(broker_->send(inbox(), messages(1, 8)));
  finish(8);
  EXPECT_EQ(broker_->pulls.size(), 1u);
  EXPECT_EQ(delivered_.size(), 8u);
}

TEST_F(PullEngineTest, AfterStopNothingIsDelivered) {
  make();
  start();
  const std::string old_inbox = inbox();
  broker_->send_while(old_inbox, {message(1)}, [&] { engine_->stop(); });
  EXPECT_FALSE(broker_->listening(old_inbox));
  EXPECT_TRUE(delivered_.empty());
  EXPECT_FALSE(engine_->read(0ms)) << "nothing runs";
  engine_->tick();
  EXPECT_EQ(broker_->pulls.size(), 1u);
}

TEST_F(PullEngineTest, DrainDeliversEverythingThatWaitsUnread) {
  make();
  start();
  broker_->reader = [] {};  // every handler thread busy: nobody reads
  ASSERT_TRUE(broker_->send(inbox(), messages(1, 3)));
  ASSERT_TRUE(broker_->send(inbox(), {status(100, "Idle Heartbeat")}));
  ASSERT_TRUE(broker_->send(inbox(), messages(4, 5)));
  EXPECT_TRUE(delivered_.empty());
  engine_->drain();
  EXPECT_EQ(delivered_, (std::vector<std::string>{"m1", "m2", "m3", "m4", "m5"}));
}

TEST_F(PullEngineTest, OneThreadReadsAtATime) {
  make();
  start();
  bool second = true;
  broker_->send_while(inbox(), messages(1, 2), [&] { second = engine_->read(0ms); });
  EXPECT_FALSE(second) << "a read under way";
  EXPECT_EQ(delivered_.size(), 2u);
}

}  // namespace
}  // namespace natsfleet::consume
