// The watch over a bound work consumer (docs/design/recovery.md) on a scripted broker and
// simulated time: when it polls, what a poll concludes (missing, stalled, a stuck leader), and
// when a consumer that serves nobody is deleted to be made anew or spared.
#include "fleet/consumer_watch.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <map>
#include <sstream>
#include <vector>

#include "base/utc_time.h"
#include "fleet/consumer_shape.h"

namespace natsfleet::fleet {
namespace {

using namespace std::chrono_literals;

Error not_found(int code, const std::string& what) {
  return Error{std::error_code(code, jetstream_category()), what + " not found"};
}

// One stream and its consumers, as both the lifecycle (to bind) and the watch see them.
class ScriptedBroker final : public nats::ConsumerApi, public ConsumerWatch::Broker {
 public:
  std::map<std::string, nats::ConsumerInfo> consumers;  // by name, on stream JOBS
  bool stream_answers = true;
  bool lookups_answer = true;
  bool link_up = true;
  bool step_down_works = true;
  std::optional<nats::InboundMessage> probe_answer;  // none: nobody answers a pull
  bool served_a_peer = false;                        // another replica was served meanwhile
  std::chrono::milliseconds peers_asked_within{0};
  std::vector<std::string> calls;

  bool connected() const override { return link_up; }
  Result<nats::StreamInfo> stream_info(const std::string& stream) override {
    calls.push_back("stream");
    if (!stream_answers) return Error{Errc::timeout, "timed out"};
    nats::StreamInfo s;
    s.name = stream;
    return s;
  }
  Result<nats::ConsumerInfo> consumer_info(const std::string&,
                                           const std::string& consumer) override {
    calls.push_back("info");
    if (!lookups_answer) return Error{Errc::timeout, "timed out"};
    auto it = consumers.find(consumer);
    if (it == consumers.end()) return not_found(kJsConsumerNotFound, "consumer");
    return it->second;
  }
  Result<nats::ConsumerInfo> create_consumer(const std::string& stream,
                                             const nats::ConsumerConfig& config) override {
    nats::ConsumerInfo& c = consumers[config.consumer_name()];
    c.stream = stream;
    c.name = config.consumer_name();
    c.config = config;
    c.created = "2020-01-01T00:00:00Z";
    c.leader = "n1";
    return c;
  }
  Result<nats::ConsumerInfo> update_consumer(const std::string& stream,
                                             const nats::ConsumerConfig& config) override {
    return create_consumer(stream, config);
  }
  Result<void> delete_consumer(const std::string&, const std::string& consumer) override {
    calls.push_back("delete");
    consumers.erase(consumer);
    return {};
  }
  Result<void> step_down_leader(const std::string&, const std::string&) override {
    calls.push_back("step down");
    if (!step_down_works) return Error{Errc::invalid_argument, "no other server"};
    return {};
  }
  Result<nats::InboundMessage> probe_leader(const std::string&, const std::string&) override {
    calls.push_back("probe");
    if (!probe_answer) return Error{Errc::no_responders, "no responders"};
    return *probe_answer;
  }
  bool peer_served(const std::string&, std::chrono::milliseconds within) override {
    calls.push_back("peers");
    peers_asked_within = within;
    return served_a_peer;
  }
  int count(const std::string& call) const {
    return static_cast<int>(std::count(calls.begin(), calls.end(), call));
  }
};

class ConsumerWatchTest : public ::testing::Test {
 protected:
  ConsumerWatchTest() {
    spec_.name = "jobs";
    spec_.subject = "jobs.>";
    spec_.stream = "JOBS";
    spec_.flow.ack_wait = 5s;  // a leader is stuck after 3 x ack_wait, at least 10 s: 15 s
    options_.info_interval = 1s;
    options_.stall_after = 60s;
    options_.replace_unserved_after = 30s;
    lifecycle_.emplace(spec_, ConsumerLifecycle::Options{}, broker_, log_);
    EXPECT_TRUE(lifecycle_->bind("JOBS"));
    status_.set_state(SubscriptionState::bound);
    watch_.emplace(spec_, options_, *lifecycle_, status_, broker_, clock_);
    watch_->bound();
    broker_.calls.clear();
  }
  nats::ConsumerInfo& consumer() { return broker_.consumers.at(lifecycle_->consumer()); }
  // The consumer loses its leader (and was made long ago).
  void leaderless() { consumer().leader.clear(); }
  ConsumerWatch::Here here() const { return {.last_served = served_}; }
  std::string log() const { return lines_.str(); }

  WorkSpec spec_;
  FleetOptions options_;
  ScriptedBroker broker_;
  base::ManualClock clock_;
  std::ostringstream lines_;
  std::shared_ptr<spdlog::logger> log_ = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_st>(lines_));
  SubscriptionStatus status_{"jobs", "work", "jobs.>", log_};
  std::optional<ConsumerLifecycle> lifecycle_;
  std::optional<ConsumerWatch> watch_;
  base::Clock::time_point served_{};
};

TEST_F(ConsumerWatchTest, APollIsDueEveryInfoIntervalAndShowsTheCounts) {
  EXPECT_FALSE(watch_->poll_due());
  clock_.advance(1s);
  ASSERT_TRUE(watch_->poll_due());
  consumer().num_pending = 7;
  consumer().num_ack_pending = 3;
  EXPECT_FALSE(watch_->poll(here()).recover);
  EXPECT_FALSE(watch_->poll_due()) << "just polled";
  const auto health = status_.snapshot();
  EXPECT_EQ(health.consumer_pending, 7u);
  EXPECT_EQ(health.consumer_ack_pending, 3u);
}

TEST_F(ConsumerWatchTest, AConsumerOrStreamReportedMissingIsARecovery) {
  broker_.consumers.clear();
  const auto verdict = watch_->poll(here());
  EXPECT_TRUE(verdict.recover);
  EXPECT_NE(verdict.why.find("consumer info"), std::string::npos) << verdict.why;
  EXPECT_EQ(broker_.count("delete"), 0) << "missing is the recovery's to make, not deleted here";
}

TEST_F(ConsumerWatchTest, WaitingMessagesWithNoProgressForStallAfterAreAStallUntilItMoves) {
  consumer().num_pending = 5;
  ConsumerWatch::Here here_now = here();
  here_now.busy = true;  // held here: not a stuck leader
  clock_.advance(60s);
  watch_->poll(here_now);
  EXPECT_EQ(status_.state(), SubscriptionState::bound) << "exactly stall_after";
  clock_.advance(1s);
  watch_->poll(here_now);
  EXPECT_EQ(status_.state(), SubscriptionState::stalled);
  here_now.settled = 1;
  clock_.advance(1s);
  watch_->poll(here_now);
  EXPECT_EQ(status_.state(), SubscriptionState::bound) << "one settled here";
}

TEST_F(ConsumerWatchTest, AFloorStuckWithMessagesAwaitingAckNoneHereAsksForANewLeader) {
  consumer().num_ack_pending = 1;
  consumer().ack_floor_stream_seq = 40;
  watch_->poll(here());
  clock_.advance(15s);
  watch_->poll(here());
  EXPECT_EQ(broker_.count("step down"), 1);
  EXPECT_NE(log().find("asked its leader to step down"), std::string::npos) << log();
  clock_.advance(1s);
  watch_->poll(here());
  EXPECT_EQ(broker_.count("step down"), 1) << "not again within the period";
}

TEST_F(ConsumerWatchTest, AStepDownASingleServerRefusesIsSaidOnce) {
  broker_.step_down_works = false;
  consumer().num_ack_pending = 1;
  watch_->poll(here());
  clock_.advance(15s);
  watch_->poll(here());
  clock_.advance(15s);
  watch_->poll(here());
  EXPECT_EQ(broker_.count("step down"), 2);
  const std::string said = log();
  const auto first = said.find("asking its leader to step down failed");
  ASSERT_NE(first, std::string::npos) << said;
  EXPECT_EQ(said.find("asking its leader to step down failed", first + 1), std::string::npos);
}

TEST_F(ConsumerWatchTest, AConsumerThatServedNobodyForReplaceAfterIsDeletedToBeMadeAnew) {
  leaderless();
  EXPECT_FALSE(watch_->unserved(here(), "its pulls find no responder").recover) << "count starts";
  clock_.advance(29s);
  EXPECT_FALSE(watch_->unserved(here(), "its pulls find no responder").recover);
  clock_.advance(1s);
  const auto verdict = watch_->unserved(here(), "its pulls find no responder");
  EXPECT_TRUE(verdict.recover);
  EXPECT_EQ(broker_.count("delete"), 1);
  EXPECT_TRUE(watch_->take_deleted());
  EXPECT_FALSE(watch_->take_deleted()) << "once";
  EXPECT_NE(log().find("has served nothing for 30 s"), std::string::npos) << log();
  EXPECT_EQ(broker_.count("peers"), 1) << "the peers were asked first";
}

TEST_F(ConsumerWatchTest, APeerTheConsumerServedMeanwhileSparesIt) {
  // This replica's lookups and pulls go unanswered (its server is cut off from the leader's),
  // while the consumer serves another replica.
  broker_.lookups_answer = false;
  broker_.served_a_peer = true;
  EXPECT_FALSE(watch_->poll(here()).recover);
  clock_.advance(30s);
  EXPECT_FALSE(watch_->poll(here()).recover);
  EXPECT_EQ(broker_.count("delete"), 0);
  EXPECT_EQ(broker_.count("peers"), 1);
  EXPECT_EQ(broker_.peers_asked_within, 30s) << "served within the time it served nobody here";
  EXPECT_NE(log().find("it served a peer meanwhile: kept"), std::string::npos) << log();
}

TEST_F(ConsumerWatchTest, LookupsUnansweredForReplaceAfterLeadToTheSameDeletion) {
  broker_.lookups_answer = false;  // while the stream answers and no leader answers a pull
  EXPECT_FALSE(watch_->poll(here()).recover);
  EXPECT_NE(log().find("consumer info failed"), std::string::npos) << log();
  clock_.advance(30s);
  const auto verdict = watch_->poll(here());
  EXPECT_TRUE(verdict.recover);
  EXPECT_EQ(broker_.count("delete"), 1);
  EXPECT_NE(log().find("its lookups go unanswered"), std::string::npos) << log();
}

TEST_F(ConsumerWatchTest, ServingMeanwhileRestartsTheCount) {
  leaderless();
  watch_->unserved(here(), "evidence");
  clock_.advance(20s);
  served_ = clock_.now();  // a heartbeat came
  EXPECT_FALSE(watch_->unserved(here(), "evidence").recover);
  clock_.advance(29s);
  EXPECT_FALSE(watch_->unserved(here(), "evidence").recover);
  EXPECT_EQ(broker_.count("delete"), 0);
}

TEST_F(ConsumerWatchTest, WhileDisconnectedNothingCounts) {
  leaderless();
  broker_.link_up = false;
  watch_->unserved(here(), "evidence");
  clock_.advance(60s);
  EXPECT_FALSE(watch_->unserved(here(), "evidence").recover);
  EXPECT_EQ(broker_.count("delete"), 0);
}

TEST_F(ConsumerWatchTest, ALeaderFoundAtTheLastLookSparesIt) {
  watch_->unserved(here(), "evidence");  // the consumer has a leader again by the last look
  clock_.advance(30s);
  EXPECT_FALSE(watch_->unserved(here(), "evidence").recover);
  EXPECT_EQ(broker_.count("delete"), 0);
  clock_.advance(29s);
  EXPECT_FALSE(watch_->unserved(here(), "evidence").recover) << "spared: the count began again";
  EXPECT_EQ(broker_.count("info"), 1) << "no last look before the new count ran out";
}

TEST_F(ConsumerWatchTest, AConsumerMadeLatelyIsStillElectingItsFirstLeader) {
  leaderless();
  consumer().created = base::format_utc_millis(std::chrono::system_clock::now());
  watch_->unserved(here(), "evidence");
  clock_.advance(30s);
  EXPECT_FALSE(watch_->unserved(here(), "evidence").recover);
  EXPECT_EQ(broker_.count("delete"), 0);
}

TEST_F(ConsumerWatchTest, AStreamThatDoesNotAnswerIsABrokerStillRecovering) {
  leaderless();
  broker_.stream_answers = false;
  watch_->unserved(here(), "evidence");
  clock_.advance(30s);
  EXPECT_FALSE(watch_->unserved(here(), "evidence").recover);
  EXPECT_EQ(broker_.count("delete"), 0);
}

TEST_F(ConsumerWatchTest, ALeaderThatAnswersAPullSparesItAndWhatThePullTookIsGivenBack) {
  leaderless();
  nats::InboundMessage taken;
  taken.subject = "jobs.1";
  taken.reply = "$JS.ACK.JOBS.jobs.1.9.9.0.0";
  broker_.probe_answer = taken;
  watch_->unserved(here(), "evidence");
  clock_.advance(30s);
  auto verdict = watch_->unserved(here(), "evidence");
  EXPECT_FALSE(verdict.recover);
  ASSERT_TRUE(verdict.given_back);
  EXPECT_EQ(verdict.given_back->reply, taken.reply);
  EXPECT_NE(log().find("its leader answers pulls"), std::string::npos) << log();
  EXPECT_EQ(broker_.count("delete"), 0);
}

TEST_F(ConsumerWatchTest, AFleetThatExitsOnAMissingConsumerNeverDeletesOne) {
  spec_.failure.missing_consumer = OnMissing::exit;
  leaderless();
  watch_->unserved(here(), "evidence");
  clock_.advance(60s);
  EXPECT_FALSE(watch_->unserved(here(), "evidence").recover);
  EXPECT_EQ(broker_.count("delete"), 0);
}

}  // namespace
}  // namespace natsfleet::fleet
