// The delivery pipeline on its own: a scripted transport records every answer, a spy stands in
// for the intake, a hand-moved clock is its time, and each rule of what a message's verdict sends
// to the broker is checked without a broker and without waiting.
#include "fleet/delivery_pipeline.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/wait_for.h"

namespace natsfleet::fleet {
namespace {

using namespace std::chrono_literals;
using natsfleet::testing::wait_for;
using Clock = std::chrono::steady_clock;

// What the pipeline sent, in order: publishes and requests.
class ScriptedTransport final : public Transport {
 public:
  struct Sent {
    std::string subject;
    std::string body;
    bool request = false;
  };

  Result<void> publish(const std::string& subject, std::string_view body) override {
    std::lock_guard lock(mu_);
    sent_.push_back({subject, std::string(body), false});
    return {};
  }
  Result<std::string> request(const std::string& subject, std::string_view body,
                              const Headers& headers, std::chrono::milliseconds) override {
    std::function<Result<std::string>(const std::string&)> answer;
    {
      std::lock_guard lock(mu_);
      sent_.push_back({subject, std::string(body), true});
      last_headers_ = headers;
      answer = answer_;
    }
    return answer ? answer(subject) : Result<std::string>(std::string("{}"));
  }

  std::vector<Sent> sent() const {
    std::lock_guard lock(mu_);
    return sent_;
  }
  // The bodies published to `subject`, in order.
  std::vector<std::string> bodies(const std::string& subject) const {
    std::vector<std::string> out;
    for (const auto& s : sent())
      if (s.subject == subject && !s.request) out.push_back(s.body);
    return out;
  }
  void answer_with(std::function<Result<std::string>(const std::string&)> answer) {
    std::lock_guard lock(mu_);
    answer_ = std::move(answer);
  }

 private:
  mutable std::mutex mu_;
  std::vector<Sent> sent_;
  Headers last_headers_;
  std::function<Result<std::string>(const std::string&)> answer_;
};

class IntakeSpy final : public IntakeControl {
 public:
  bool read(std::chrono::milliseconds) override { return false; }  // the test submits
  void message_done() override { done++; }
  void message_back() override { back++; }
  void hold_back(bool hold) override { held = hold; }
  void set_window(int messages) override { window = messages; }
  std::atomic<int> done{0};
  std::atomic<int> back{0};
  std::atomic<bool> held{false};
  std::atomic<int> window{0};
};

// When the test's messages were stored, unless a test says otherwise: a moment ago.
const std::chrono::system_clock::time_point kStored = std::chrono::system_clock::now();

// A JetStream reply subject for stream JOBS, consumer jobs.
std::string reply(uint64_t stream_seq, uint64_t delivered = 1,
                  std::chrono::system_clock::time_point stored = kStored) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(stored.time_since_epoch()).count();
  return "$JS.ACK.JOBS.jobs." + std::to_string(delivered) + "." + std::to_string(stream_seq) + "." +
         std::to_string(stream_seq) + "." + std::to_string(ns) + ".0";
}

nats::InboundMessage delivery(uint64_t stream_seq, uint64_t delivered = 1) {
  return {"jobs.run", reply(stream_seq, delivered), "m" + std::to_string(stream_seq), {}};
}

// A handler that holds each message until released, then acks it.
class HoldingHandler {
 public:
  ~HoldingHandler() { release(); }
  WorkHandler handler() {
    return [this](const Message&) {
      running_ = true;
      std::unique_lock lock(mu_);
      released_cv_.wait(lock, [&] { return released_; });
      return Disposition::ack();
    };
  }
  bool wait_running() {
    return wait_for([&] { return running_.load(); }, 5s);
  }
  void release() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    released_cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable released_cv_;
  bool released_ = false;
  std::atomic<bool> running_{false};
};

WorkSpec spec() {
  WorkSpec s;
  s.name = "jobs";
  s.subject = "jobs.>";
  s.flow.ack_wait = 30s;
  s.flow.heartbeat = 5s;
  s.failure.max_deliver = 5;
  s.failure.nak_backoff_min = 1s;
  s.failure.nak_backoff_max = 60s;
  return s;
}

class Pipeline : public ::testing::Test {
 protected:
  // Starts a pipeline whose handler is `handler`.
  void start(WorkHandler handler) {
    pipeline_.emplace(spec_, std::move(handler), status_, transport_, intake_, clock_);
  }
  DeliveryPipeline& pipeline() { return *pipeline_; }
  // Waits until `n` answers went to `reply_subject`.
  bool answered(const std::string& reply_subject, size_t n = 1) {
    return wait_for([&] { return transport_.bodies(reply_subject).size() >= n; }, 10s);
  }

  base::ManualClock clock_;
  WorkSpec spec_ = spec();
  SubscriptionStatus status_{"jobs", "work", "jobs.>", std::make_shared<spdlog::logger>("test")};
  ScriptedTransport transport_;
  IntakeSpy intake_;
  std::optional<DeliveryPipeline> pipeline_;
};

TEST_F(Pipeline, AnAcceptedMessageIsAckedOnceAndFreesItsPlaceInTheWindow) {
  start([](const Message&) { return Disposition::ack(); });
  pipeline().take(delivery(7), false);
  ASSERT_TRUE(answered(reply(7)));
  ASSERT_TRUE(wait_for([&] { return intake_.done.load() == 1; }, 5s));
  EXPECT_EQ(transport_.bodies(reply(7)), std::vector<std::string>{"+ACK"});
  EXPECT_EQ(status_.counters.acked.load(), 1u);
  EXPECT_EQ(pipeline().last_handled_seq(), 7u);
}

TEST_F(Pipeline, ARejectionIsNakedWithABackoffThatDoublesPerDelivery) {
  // A handler that throws rejects the message: nak_backoff_min, doubled per delivery.
  start([](const Message&) -> Disposition { throw std::runtime_error("boom"); });
  pipeline().take(delivery(1, /*delivered=*/3), false);
  ASSERT_TRUE(answered(reply(1, 3)));
  EXPECT_EQ(transport_.bodies(reply(1, 3)),
            std::vector<std::string>{"-NAK {\"delay\": 4000000000}"});  // 1 s x 2 x 2
  EXPECT_EQ(status_.counters.handler_errors.load(), 1u);
  EXPECT_EQ(status_.counters.naked.load(), 1u);
}

TEST_F(Pipeline, ARejectionOnTheLastDeliveryIsTerminatedOnceItsDeadLetterIsStored) {
  spec_.failure.dead_letter = "jobs.dead";
  transport_.answer_with(
      [](const std::string&) { return Result<std::string>("{\"stream\":\"DEAD\",\"seq\":1}"); });
  start([](const Message&) { return Disposition::nak().because("bad input"); });
  pipeline().take(delivery(3, /*delivered=*/5), false);
  ASSERT_TRUE(answered(reply(3, 5)));
  const auto sent = transport_.sent();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_TRUE(sent[0].request);
  EXPECT_EQ(sent[0].subject, "jobs.dead");  // stored first
  EXPECT_EQ(sent[0].body, "m3");
  EXPECT_EQ(sent[1].subject, reply(3, 5));
  EXPECT_EQ(sent[1].body, "+TERM");  // then terminated
  EXPECT_EQ(status_.counters.dead_lettered.load(), 1u);
  EXPECT_EQ(status_.counters.termed.load(), 1u);
}

TEST_F(Pipeline, ADeadLetterNotStoredLeavesTheMessageNakedNotTerminated) {
  spec_.failure.dead_letter = "jobs.dead";
  transport_.answer_with(
      [](const std::string&) { return Result<std::string>(Errc::timeout, "no answer"); });
  start([](const Message&) { return Disposition::term().because("bad input"); });
  pipeline().take(delivery(4), false);
  ASSERT_TRUE(answered(reply(4)));
  EXPECT_EQ(transport_.bodies(reply(4)), std::vector<std::string>{"-NAK {\"delay\": 1000000000}"});
  EXPECT_EQ(status_.counters.termed.load(), 0u);
}

TEST_F(Pipeline, ARetryUsesNoDeliveryAndSendsNothing) {
  std::atomic<int> calls{0};
  start([&](const Message&) {
    calls++;
    return Disposition::retry(1s).because("HTTP 503");
  });
  pipeline().take(delivery(5), false);
  ASSERT_TRUE(wait_for([&] { return status_.counters.retried.load() == 1; }, 5s));
  EXPECT_TRUE(transport_.sent().empty()) << "a retry is no ack, no nak";
  EXPECT_EQ(intake_.done.load(), 0) << "still in hand";
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(Pipeline, TwoMessagesFailingRetryablyStopTheIntakeAndTheNextWaitsUntried) {
  std::atomic<int> calls{0};
  start([&](const Message& m) {
    calls++;
    if (m.stream_seq() <= 2) throw DownstreamUnavailable("connection refused");
    return Disposition::ack();
  });
  pipeline().take(delivery(1), false);
  pipeline().take(delivery(2), false);
  ASSERT_TRUE(wait_for([&] { return intake_.held.load(); }, 5s));
  EXPECT_TRUE(pipeline().downstream_down());
  pipeline().take(delivery(3), false);
  // At the clock's epoch nothing is due: tend_held only reports what is held.
  ASSERT_TRUE(wait_for(
      [&] {
        pipeline().tend_held(Clock::time_point{});
        return status_.snapshot().held == 3;
      },
      5s))
      << status_.snapshot().held;
  EXPECT_EQ(calls.load(), 2) << "held untried while the downstream is down";
  EXPECT_TRUE(transport_.sent().empty());
}

TEST_F(Pipeline, AMessageThatWaitedSinceBeforeAGapIsSkippedUnanswered) {
  std::atomic<int> calls{0};
  start([&](const Message&) {
    calls++;
    return Disposition::ack();
  });
  auto stale = delivery(8);
  stale.received = clock_.now();
  clock_.advance(pipeline().stale_after());  // received, then nothing for half of ack_wait
  pipeline().take(std::move(stale), false);
  ASSERT_TRUE(wait_for([&] { return intake_.done.load() == 1; }, 5s));
  EXPECT_EQ(calls.load(), 0);
  EXPECT_TRUE(transport_.sent().empty()) << "its redelivery decides who has it";
  EXPECT_EQ(pipeline().stale_skipped(), 1u);
}

TEST_F(Pipeline, AMessageDeliveredOverTwiceMaxDeliverWithNoVerdictIsSetAsideUntried) {
  spec_.failure.max_deliver = 2;
  std::atomic<int> calls{0};
  start([&](const Message&) {
    calls++;
    return Disposition::ack();
  });
  // Stored an hour ago and delivered 5 times: every replica that took it died.
  const auto old = std::chrono::system_clock::now() - 1h;
  pipeline().take({"jobs.run", reply(9, 5, old), "m9", {}}, false);
  ASSERT_TRUE(answered(reply(9, 5, old)));
  EXPECT_EQ(transport_.bodies(reply(9, 5, old)), std::vector<std::string>{"+TERM"});
  EXPECT_EQ(calls.load(), 0);
  // Stored a moment ago: the deliveries were quick redeliveries, not deaths. It is handled.
  pipeline().take(delivery(10, 5), false);
  ASSERT_TRUE(answered(reply(10, 5)));
  EXPECT_EQ(transport_.bodies(reply(10, 5)), std::vector<std::string>{"+ACK"});
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(Pipeline, ResentAcksGoOldestFirstAndTheBrokerIsAskedToConfirmTheLast) {
  spec_.flow.max_ack_pending = 3;
  start([](const Message&) { return Disposition::ack(); });
  for (uint64_t seq = 1; seq <= 5; ++seq) {
    pipeline().take(delivery(seq), false);
    ASSERT_TRUE(answered(reply(seq)));
  }
  const size_t before = transport_.sent().size();
  pipeline().resend_recent_acks(1s);
  const auto sent = transport_.sent();
  ASSERT_EQ(sent.size(), before + 3) << "max_ack_pending of them";
  EXPECT_EQ(sent[before].subject, reply(3));
  EXPECT_FALSE(sent[before].request);
  EXPECT_EQ(sent[before + 1].subject, reply(4));
  EXPECT_EQ(sent[before + 2].subject, reply(5));
  EXPECT_TRUE(sent[before + 2].request) << "the last waits for the broker's answer";
  EXPECT_EQ(sent[before + 2].body, "+ACK");
}

TEST_F(Pipeline, StopGivesBackWhatNeverStartedAndLetsTheRunningHandlerFinish) {
  HoldingHandler holding;
  start(holding.handler());
  pipeline().take(delivery(1), false);
  ASSERT_TRUE(holding.wait_running());
  pipeline().take(delivery(2), false);
  pipeline().take(delivery(3), false);
  EXPECT_FALSE(pipeline().stop(0ms)) << "a handler is still running";
  EXPECT_EQ(transport_.bodies(reply(2)), std::vector<std::string>{"-NAK"});
  EXPECT_EQ(transport_.bodies(reply(3)), std::vector<std::string>{"-NAK"});
  holding.release();
  pipeline().join();
  EXPECT_EQ(transport_.bodies(reply(1)), std::vector<std::string>{"+ACK"});
  // Delivered after the stop: given back at once.
  pipeline().take(delivery(4), false);
  EXPECT_EQ(transport_.bodies(reply(4)), std::vector<std::string>{"-NAK"});
}

TEST_F(Pipeline, AHandlerRunningLongIsKeptAliveUntilKeepAliveLimit) {
  spec_.flow.keep_alive_limit = 5min;
  HoldingHandler holding;
  start(holding.handler());
  pipeline().take(delivery(1), false);
  ASSERT_TRUE(holding.wait_running());
  const auto now = clock_.now();
  pipeline().keep_alive(now + 1s);
  EXPECT_TRUE(transport_.bodies(reply(1)).empty()) << "not due yet: a third of ack_wait";
  pipeline().keep_alive(now + 11s);
  EXPECT_EQ(transport_.bodies(reply(1)), std::vector<std::string>{"+WPI"});
  EXPECT_EQ(status_.counters.kept_alive.load(), 1u);
  // Past keep_alive_limit: no more, so a hung handler's message is redelivered after ack_wait.
  pipeline().keep_alive(now + 6min);
  pipeline().keep_alive(now + 6min + 11s);
  EXPECT_EQ(transport_.bodies(reply(1)), std::vector<std::string>{"+WPI"});
  holding.release();
  ASSERT_TRUE(answered(reply(1), 2));
}

// A handler that keeps a copy of each message and returns `returns`.
struct Keeping {
  explicit Keeping(Disposition r = Disposition::ack()) : returns(std::move(r)) {}
  const Disposition returns;
  std::mutex mu;
  std::vector<Message> kept;
  WorkHandler handler() {
    return [this](const Message& m) {
      std::lock_guard lock(mu);
      kept.push_back(m);
      return returns;
    };
  }
  Message at(size_t i) {
    std::lock_guard lock(mu);
    return kept.at(i);
  }
};

TEST_F(Pipeline, AMessageKeptByItsHandlerAnswersShuttingDownOnceThePipelineIsGone) {
  Keeping keeping;
  start(keeping.handler());
  pipeline().take(delivery(1), false);
  ASSERT_TRUE(answered(reply(1)));
  EXPECT_TRUE(keeping.at(0).in_progress()) << "while the pipeline lives";
  pipeline_.reset();
  auto late = keeping.at(0).in_progress();
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, Errc::shutting_down);
}

TEST_F(Pipeline, MeasuredHandlersResizeTheIntakesWindow) {
  spec_.flow.ack_wait = 2s;  // a 100 ms handler is slow against it: resized at its first message
  start([&](const Message&) {
    clock_.advance(100ms);  // the handler's work, on the test's clock
    return Disposition::ack();
  });
  pipeline().take(delivery(1), false);
  ASSERT_TRUE(answered(reply(1)));
  ASSERT_TRUE(wait_for([&] { return intake_.window.load() > 0; }, 5s));
  EXPECT_EQ(intake_.window.load(), 10);  // 1 s (half of ack_wait) of 100 ms handlers
  EXPECT_EQ(pipeline().window(), intake_.window.load());
}

// --- Verdicts given later (Disposition::later, Message::settle) ---------------------------------

TEST_F(Pipeline, ALaterVerdictGoesOutWhenGivenAndTheWindowPlaceIsFreedAtOnce) {
  Keeping deferring(Disposition::later());
  start(deferring.handler());
  pipeline().take(delivery(1), false);
  ASSERT_TRUE(wait_for([&] { return intake_.done.load() == 1; }, 5s));
  EXPECT_TRUE(transport_.sent().empty()) << "no verdict yet";
  EXPECT_EQ(pipeline().awaiting_verdict(), 1u);
  EXPECT_TRUE(pipeline().busy());
  ASSERT_TRUE(deferring.at(0).ack());
  EXPECT_EQ(transport_.bodies(reply(1)), std::vector<std::string>{"+ACK"});
  EXPECT_EQ(status_.counters.acked.load(), 1u);
  EXPECT_EQ(pipeline().awaiting_verdict(), 0u);
  EXPECT_EQ(intake_.done.load(), 1) << "its place was freed once";
  EXPECT_EQ(pipeline().last_handled_seq(), 1u);
  auto again = deferring.at(0).ack();
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::already_settled);
  EXPECT_EQ(transport_.bodies(reply(1)).size(), 1u);
}

TEST_F(Pipeline, AVerdictGivenWhileTheHandlerRunsWinsOverWhatItReturns) {
  std::atomic<int> second{0};
  start([&](const Message& m) {
    EXPECT_TRUE(m.ack());
    second = static_cast<int>(m.nak().error().code.value());
    return Disposition::nak();
  });
  pipeline().take(delivery(2), false);
  ASSERT_TRUE(answered(reply(2)));
  ASSERT_TRUE(wait_for([&] { return intake_.done.load() == 1; }, 5s));
  EXPECT_EQ(transport_.bodies(reply(2)), std::vector<std::string>{"+ACK"});
  EXPECT_EQ(second.load(), static_cast<int>(Errc::already_settled));
  EXPECT_EQ(pipeline().awaiting_verdict(), 0u);
}

TEST_F(Pipeline, AVerdictGivenBeforeTheHandlerReturnsLaterIsCarriedOutWhenItDoes) {
  start([&](const Message& m) {
    std::thread([m] { EXPECT_TRUE(m.term("bad input")); }).join();  // e.g. an event loop
    return Disposition::later();
  });
  pipeline().take(delivery(3), false);
  ASSERT_TRUE(answered(reply(3)));
  ASSERT_TRUE(wait_for([&] { return intake_.done.load() == 1; }, 5s));
  EXPECT_EQ(transport_.bodies(reply(3)), std::vector<std::string>{"+TERM"});
  EXPECT_EQ(pipeline().awaiting_verdict(), 0u);
}

TEST_F(Pipeline, AReturnedVerdictIsTheOnlyOne) {
  Keeping keeping;
  start(keeping.handler());
  pipeline().take(delivery(4), false);
  ASSERT_TRUE(answered(reply(4)));
  auto late = keeping.at(0).nak();
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, Errc::already_settled);
  EXPECT_EQ(transport_.bodies(reply(4)), std::vector<std::string>{"+ACK"});
}

TEST_F(Pipeline, ADeferredRetryTakesAPlaceInTheWindowAgainAndUsesNoDelivery) {
  Keeping deferring(Disposition::later());
  start(deferring.handler());
  pipeline().take(delivery(5), false);
  ASSERT_TRUE(wait_for([&] { return intake_.done.load() == 1; }, 5s));
  ASSERT_TRUE(deferring.at(0).settle(Disposition::retry().because("HTTP 503")));
  EXPECT_EQ(intake_.back.load(), 1);
  EXPECT_EQ(status_.counters.retried.load(), 1u);
  EXPECT_TRUE(transport_.sent().empty()) << "a retry is no ack, no nak";
}

TEST_F(Pipeline, ADeferredRejectionOnTheLastDeliveryIsDeadLettered) {
  spec_.failure.dead_letter = "jobs.dead";
  transport_.answer_with(
      [](const std::string&) { return Result<std::string>("{\"stream\":\"DEAD\",\"seq\":1}"); });
  Keeping deferring(Disposition::later());
  start(deferring.handler());
  pipeline().take(delivery(6, /*delivered=*/5), false);
  ASSERT_TRUE(wait_for([&] { return intake_.done.load() == 1; }, 5s));
  ASSERT_TRUE(deferring.at(0).nak());
  EXPECT_EQ(transport_.bodies(reply(6, 5)), std::vector<std::string>{"+TERM"});
  EXPECT_EQ(status_.counters.dead_lettered.load(), 1u);
}

TEST_F(Pipeline, ADeferredMessageIsKeptAliveUntilKeepAliveLimitThenLapses) {
  spec_.flow.keep_alive_limit = 25s;  // ack_wait 30 s: in-progress acks every 10 s
  Keeping deferring(Disposition::later());
  start(deferring.handler());
  pipeline().take(delivery(7), false);
  ASSERT_TRUE(wait_for([&] { return pipeline().awaiting_verdict() == 1; }, 5s));
  const auto now = clock_.now();
  const std::vector<std::string> one{"+WPI"}, two{"+WPI", "+WPI"};
  pipeline().keep_alive(now + 1s);
  EXPECT_TRUE(transport_.bodies(reply(7)).empty()) << "not due yet: a third of ack_wait";
  pipeline().keep_alive(now + 11s);
  EXPECT_EQ(transport_.bodies(reply(7)), one);
  pipeline().keep_alive(now + 22s);
  EXPECT_EQ(transport_.bodies(reply(7)), two);
  // Past keep_alive_limit: no more; ack_wait after the last one the broker has redelivered it.
  pipeline().keep_alive(now + 33s);
  pipeline().keep_alive(now + 51s);
  EXPECT_EQ(transport_.bodies(reply(7)), two);
  EXPECT_EQ(pipeline().awaiting_verdict(), 1u);
  pipeline().keep_alive(now + 53s);
  EXPECT_EQ(pipeline().awaiting_verdict(), 0u);
  auto late = deferring.at(0).ack();
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, Errc::timeout);
  EXPECT_EQ(transport_.bodies(reply(7)), two);
}

TEST_F(Pipeline, StopGivesBackWhatAwaitsAVerdictAndALateOneIsRefused) {
  Keeping deferring(Disposition::later());
  start(deferring.handler());
  pipeline().take(delivery(8), false);
  pipeline().take(delivery(9), false);
  ASSERT_TRUE(wait_for([&] { return pipeline().awaiting_verdict() == 2; }, 5s));
  EXPECT_TRUE(pipeline().stop(0ms));
  EXPECT_EQ(transport_.bodies(reply(8)), std::vector<std::string>{"-NAK"});
  EXPECT_EQ(transport_.bodies(reply(9)), std::vector<std::string>{"-NAK"});
  auto late = deferring.at(0).ack();
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, Errc::shutting_down);
  EXPECT_EQ(transport_.bodies(reply(8)).size(), 1u);
}

TEST_F(Pipeline, StopWaitsForAVerdictGivenBeforeItsDeadline) {
  Keeping deferring(Disposition::later());
  start(deferring.handler());
  pipeline().take(delivery(10), false);
  ASSERT_TRUE(wait_for([&] { return pipeline().awaiting_verdict() == 1; }, 5s));
  Message kept = deferring.at(0);
  std::thread settler([kept] {
    wait_for([&] { return kept.stop_token().stop_requested(); }, 60s);
    EXPECT_TRUE(kept.ack());
  });
  pipeline().request_stop();
  EXPECT_TRUE(pipeline().stop(60s));
  settler.join();
  EXPECT_EQ(transport_.bodies(reply(10)), std::vector<std::string>{"+ACK"});
}

TEST_F(Pipeline, AMessageAwaitingItsVerdictIsGivenBackWhenThePipelineGoes) {
  Keeping deferring(Disposition::later());
  start(deferring.handler());
  pipeline().take(delivery(11), false);
  ASSERT_TRUE(wait_for([&] { return pipeline().awaiting_verdict() == 1; }, 5s));
  pipeline_.reset();
  EXPECT_EQ(transport_.bodies(reply(11)), std::vector<std::string>{"-NAK"});
  auto late = deferring.at(0).ack();
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, Errc::shutting_down);
}

TEST(DeferredVerdict, AMessageBuiltElsewhereTakesNoVerdict) {
  Message m("jobs.run", "x", {});
  auto settled = m.ack();
  ASSERT_FALSE(settled);
  EXPECT_EQ(settled.error().code, Errc::invalid_argument);
}

}  // namespace
}  // namespace natsfleet::fleet
