// The consumer lifecycle's rules (README: "Migration: a consumer of the wrong shape" and the
// recovery design notes) against a scripted broker. Timing against a real broker stays in
// tests/integration (shapes_test, recovery_test).
#include "fleet/consumer_lifecycle.h"

#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <functional>

#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "fleet/consumer_shape.h"

namespace natsfleet::fleet {
namespace {

using namespace std::chrono_literals;
using Lookup = ConsumerLifecycle::Lookup;
using Scope = ConsumerLifecycle::Scope;

Error not_found(int code, const std::string& what) {
  return Error{std::error_code(code, jetstream_category()), what + " not found"};
}

bool only_mutable_fields_differ(nats::ConsumerConfig a, const nats::ConsumerConfig& b) {
  a.ack_wait = b.ack_wait;
  a.max_deliver = b.max_deliver;
  a.max_ack_pending = b.max_ack_pending;
  a.description = b.description;
  return a == b;
}

// The broker as the lifecycle sees it: streams, consumers and every call made, with faults on
// demand. A create of an existing consumer updates it in place when only mutable fields differ,
// and is refused otherwise (server 2.9).
class ScriptedBroker final : public nats::ConsumerApi {
 public:
  std::map<std::string, nats::StreamInfo> streams;
  std::map<std::string, nats::ConsumerInfo> consumers;  // by "STREAM/name"
  std::vector<std::string> calls;
  bool unreachable = false;
  // The next this many consumer lookups answer "not found" (a new leader that lags).
  int hidden_lookups = 0;
  // A peer replica's create lands first: the next create is refused and this one exists.
  std::optional<nats::ConsumerConfig> peer_creates_first;
  // A server before 2.10: creates drop the fields it does not know.
  bool before_210 = false;

  void add_stream(const std::string& name, uint64_t last_seq, std::string created = "t0") {
    nats::StreamInfo s;
    s.name = name;
    s.last_seq = last_seq;
    s.created = std::move(created);
    streams[name] = s;
  }
  nats::ConsumerInfo& add_consumer(const std::string& stream, const nats::ConsumerConfig& config,
                                   uint64_t ack_floor = 0) {
    nats::ConsumerInfo& c = consumers[stream + "/" + config.consumer_name()];
    c.stream = stream;
    c.name = config.consumer_name();
    c.config = config;
    c.ack_floor_stream_seq = ack_floor;
    c.created = "made " + std::to_string(++made_);
    return c;
  }
  const nats::ConsumerInfo* find(const std::string& stream, const std::string& name) const {
    auto it = consumers.find(stream + "/" + name);
    return it == consumers.end() ? nullptr : &it->second;
  }
  int count(const std::string& call) const {
    return static_cast<int>(std::count(calls.begin(), calls.end(), call));
  }

  Result<nats::StreamInfo> stream_info(const std::string& stream) override {
    calls.push_back("stream " + stream);
    if (unreachable) return Error{Errc::timeout, "timed out"};
    auto it = streams.find(stream);
    if (it == streams.end()) return not_found(kJsStreamNotFound, "stream");
    return it->second;
  }
  Result<nats::ConsumerInfo> consumer_info(const std::string& stream,
                                           const std::string& consumer) override {
    calls.push_back("info " + consumer);
    if (unreachable) return Error{Errc::timeout, "timed out"};
    if (!streams.count(stream)) return not_found(kJsStreamNotFound, "stream");
    if (hidden_lookups > 0) {
      --hidden_lookups;
      return not_found(kJsConsumerNotFound, "consumer");
    }
    if (const auto* c = find(stream, consumer)) return *c;
    return not_found(kJsConsumerNotFound, "consumer");
  }
  Result<nats::ConsumerInfo> create_consumer(const std::string& stream,
                                             const nats::ConsumerConfig& config) override {
    calls.push_back("create " + config.consumer_name());
    if (unreachable) return Error{Errc::timeout, "timed out"};
    if (peer_creates_first) {
      add_consumer(stream, *peer_creates_first);
      peer_creates_first.reset();
      return Error{std::error_code(10148, jetstream_category()), "consumer already exists"};
    }
    if (auto it = consumers.find(stream + "/" + config.consumer_name()); it != consumers.end()) {
      if (!only_mutable_fields_differ(it->second.config, config))
        return Error{std::error_code(10148, jetstream_category()), "consumer already exists"};
      it->second.config = config;  // in place: position and creation time stay
      return it->second;
    }
    if (before_210) {
      auto known = config;
      known.filter_subjects.clear();
      known.metadata.clear();
      return add_consumer(stream, known);
    }
    return add_consumer(stream, config);
  }
  Result<nats::ConsumerInfo> update_consumer(const std::string& stream,
                                             const nats::ConsumerConfig& config) override {
    calls.push_back("update " + config.consumer_name());
    if (unreachable) return Error{Errc::timeout, "timed out"};
    auto it = consumers.find(stream + "/" + config.consumer_name());
    if (it == consumers.end()) return not_found(kJsConsumerNotFound, "consumer");
    if (!only_mutable_fields_differ(it->second.config, config))
      return Error{std::error_code(10012, jetstream_category()), "consumer cannot be updated"};
    it->second.config = config;  // in place: position and creation time stay
    return it->second;
  }
  Result<void> delete_consumer(const std::string& stream, const std::string& consumer) override {
    calls.push_back("delete " + consumer);
    if (unreachable) return Error{Errc::timeout, "timed out"};
    if (consumers.erase(stream + "/" + consumer) == 0)
      return not_found(kJsConsumerNotFound, "consumer");
    return {};
  }

 private:
  int made_ = 0;
};

WorkSpec work() {
  WorkSpec s;
  s.name = "sync-listener";
  s.subject = "daemon.sync.complete";
  s.flow.ack_wait = 30s;
  return s;
}

nats::ConsumerConfig plain_push(const std::string& name) {
  nats::ConsumerConfig c = desired_consumer_config(work(), name);
  c.deliver_subject = "deliver.sync";
  c.deliver_group.clear();
  c.max_waiting = 0;
  return c;
}

class Lifecycle : public ::testing::Test {
 protected:
  Lifecycle() {
    log_ = std::make_shared<spdlog::logger>(
        "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(lines_));
    broker.add_stream("DAEMON_SYNC", 500);
  }

  ConsumerLifecycle make(Scope scope = Scope::shared, bool last_per_subject = false) {
    ConsumerLifecycle::Options options;
    options.scope = scope;
    options.last_per_subject = last_per_subject;
    options.replica_consumer = "status-0a1b2c3d";
    options.retire_grace = 30s;
    options.missing_lookups = 3;
    options.missing_window = 2s;
    options.first_create_wait = 5s;
    return ConsumerLifecycle(spec, options, broker, log_);
  }
  std::string log() const { return lines_.str(); }
  // Bound, ack floor 120 seen, the consumer gone, the stream now holding up to `last_seq`:
  // what the recreation makes (an error when binding failed).
  Result<nats::ConsumerInfo> recreate_after_floor_120_on_a_stream_holding(uint64_t last_seq) {
    auto lifecycle = make();
    if (auto bound = lifecycle.bind("DAEMON_SYNC"); !bound) return bound.error();
    lifecycle.saw_ack_floor(120);
    broker.consumers.clear();
    broker.streams["DAEMON_SYNC"].last_seq = last_seq;
    return lifecycle.recreate(0);
  }
  std::string successor() const {
    return successor_name(spec.name, "DAEMON_SYNC", filter_subjects(spec), spec.shape);
  }

  WorkSpec spec = work();
  ScriptedBroker broker;

 private:
  std::ostringstream lines_;
  std::shared_ptr<spdlog::logger> log_;
};

TEST_F(Lifecycle, NoConsumerIsCreatedAsTheSpecAsks) {
  auto lifecycle = make();
  auto info = lifecycle.bind("DAEMON_SYNC");
  ASSERT_TRUE(info) << info.error().describe();
  EXPECT_EQ(info->config, desired_consumer_config(spec));
  EXPECT_EQ(lifecycle.consumer(), "sync-listener");
  EXPECT_EQ(lifecycle.stream(), "DAEMON_SYNC");
  EXPECT_NE(log().find("created shared pull consumer sync-listener"), std::string::npos) << log();
}

TEST_F(Lifecycle, AServerThatIgnoresFilterSubjectsKeepsNoConsumerThatFiltersNothing) {
  spec.subjects = {"daemon.sync.complete", "daemon.sync.failed"};
  broker.before_210 = true;
  auto lifecycle = make();
  auto info = lifecycle.bind("DAEMON_SYNC");
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().describe().find("need nats-server 2.10 or newer"), std::string::npos)
      << info.error().describe();
  EXPECT_EQ(broker.count("delete sync-listener"), 1);
  EXPECT_EQ(broker.find("DAEMON_SYNC", "sync-listener"), nullptr);

  broker.before_210 = false;
  info = lifecycle.bind("DAEMON_SYNC");
  ASSERT_TRUE(info) << info.error().describe();
  EXPECT_EQ(info->config.filter_subjects, spec.subjects);
}

// A replica starting just after the consumer was deleted knows no ack floor; the replicas that
// were bound recreate it after theirs. Created from the start first, it would make the fleet
// handle the whole stream again (chaos seed 1202: 53,211 of 55,248 messages twice).
TEST_F(Lifecycle, AFirstBindFindingNoConsumerOnAFullStreamWaitsForAPeerToRecreateIt) {
  auto lifecycle = make();
  std::vector<std::chrono::milliseconds> waits;
  auto info = lifecycle.bind("DAEMON_SYNC", 0, [&](std::chrono::milliseconds d) {
    waits.push_back(d);
    // Meanwhile a bound replica recreates it after the ack floor it saw.
    broker.add_consumer("DAEMON_SYNC", config_starting_at(spec, 301, spec.name), 300);
    return true;
  });
  ASSERT_TRUE(info) << info.error().describe();
  EXPECT_EQ(waits, (std::vector<std::chrono::milliseconds>{5s}));
  EXPECT_EQ(info->config.opt_start_seq, 301u) << "the peer's, not one from the stream's start";
  EXPECT_EQ(broker.count("create sync-listener"), 0);
  EXPECT_EQ(lifecycle.ack_floor(), 300u);
  EXPECT_NE(log().find("waiting 5000 ms for a replica that knew it"), std::string::npos) << log();
}

TEST_F(Lifecycle, AFirstBindThatNoLiveReplicaCouldRaceCreatesTheConsumerAtOnce) {
  auto lifecycle = make();
  int waited = 0;
  std::vector<std::string> asked;
  auto info = lifecycle.bind(
      "DAEMON_SYNC", 0,
      [&](std::chrono::milliseconds) {
        ++waited;
        return true;
      },
      [&](const std::string& stream) {
        asked.push_back(stream);
        return ConsumerLifecycle::Peers::nobody;
      });
  ASSERT_TRUE(info) << info.error().describe();
  EXPECT_EQ(asked, std::vector<std::string>{"DAEMON_SYNC"});
  EXPECT_EQ(waited, 0) << "nobody knew the consumer: nobody recreates it after a floor";
  EXPECT_EQ(info->config, desired_consumer_config(spec));
  EXPECT_EQ(broker.count("create sync-listener"), 1);
}

TEST_F(Lifecycle, APeerThatAnswersOrNoAnswerInTimeKeepsTheWait) {
  for (auto peers : {ConsumerLifecycle::Peers::someone, ConsumerLifecycle::Peers::unknown}) {
    broker.consumers.clear();
    auto lifecycle = make();
    int waited = 0;
    auto info = lifecycle.bind(
        "DAEMON_SYNC", 0,
        [&](std::chrono::milliseconds) {
          ++waited;
          return true;
        },
        [&](const std::string&) { return peers; });
    ASSERT_TRUE(info) << info.error().describe();
    EXPECT_EQ(waited, 1) << static_cast<int>(peers);
  }
}

TEST_F(Lifecycle, WhenNoPeerRecreatesItTheFirstBindCreatesItAfterTheWait) {
  auto lifecycle = make();
  int waited = 0;
  auto info = lifecycle.bind("DAEMON_SYNC", 0, [&](std::chrono::milliseconds) {
    ++waited;
    return true;
  });
  ASSERT_TRUE(info) << info.error().describe();
  EXPECT_EQ(waited, 1);
  EXPECT_EQ(info->config, desired_consumer_config(spec));
}

TEST_F(Lifecycle, ABindRemakingAConsumerItWasBoundToStartsAfterItsAckFloor) {
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  lifecycle.saw_ack_floor(120);
  broker.consumers.clear();
  auto info = lifecycle.bind("DAEMON_SYNC");
  ASSERT_TRUE(info) << info.error().describe();
  EXPECT_EQ(info->config, config_starting_at(spec, 121, spec.name));
}

TEST_F(Lifecycle, NothingToReplayMeansNoWait) {
  int waited = 0;
  auto count_waits = [&](std::chrono::milliseconds) {
    ++waited;
    return true;
  };
  broker.add_stream("EMPTY", 0);
  auto on_empty = make();
  ASSERT_TRUE(on_empty.bind("EMPTY", 0, count_waits));
  spec.start = StartAt::new_messages;
  auto only_new = make();
  ASSERT_TRUE(only_new.bind("DAEMON_SYNC", 0, count_waits));
  EXPECT_EQ(waited, 0) << "an empty stream, or a consumer of new messages, replays nothing";
}

TEST_F(Lifecycle, OnlyAFirstBindWaits) {
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  broker.consumers.clear();
  int waited = 0;
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC", 0, [&](std::chrono::milliseconds) {
    ++waited;
    return true;
  }));
  EXPECT_EQ(waited, 0) << "a replica that was bound recovers through recreate, and knows a floor";
}

TEST_F(Lifecycle, AStopDuringTheWaitCreatesNothing) {
  auto lifecycle = make();
  auto info = lifecycle.bind("DAEMON_SYNC", 0, [](std::chrono::milliseconds) { return false; });
  EXPECT_FALSE(info);
  EXPECT_EQ(broker.count("create sync-listener"), 0);
}

TEST_F(Lifecycle, APeerThatCreatedItAMomentEarlierIsBoundTo) {
  broker.peer_creates_first = desired_consumer_config(spec);
  auto lifecycle = make();
  auto info = lifecycle.bind("DAEMON_SYNC");
  ASSERT_TRUE(info) << info.error().describe();
  EXPECT_EQ(lifecycle.consumer(), "sync-listener");
  EXPECT_EQ(broker.consumers.size(), 1u);
  EXPECT_EQ(log().find("created shared"), std::string::npos) << "the peer created it, not us";
}

TEST_F(Lifecycle, MutableDriftIsUpdatedInPlaceKeepingPositionAndUnknownFields) {
  auto drifted = desired_consumer_config(spec);
  drifted.ack_wait = 10s;
  drifted.max_deliver = 5;
  drifted.other_fields["sample_freq"] = "\"100%\"";
  const std::string created = broker.add_consumer("DAEMON_SYNC", drifted, 40).created;
  auto lifecycle = make();
  auto info = lifecycle.bind("DAEMON_SYNC");
  ASSERT_TRUE(info) << info.error().describe();
  EXPECT_EQ(info->config.ack_wait, 30s);
  EXPECT_EQ(info->config.max_deliver, kBrokerMaxDeliver);
  EXPECT_EQ(info->config.other_fields.at("sample_freq"), "\"100%\"");
  EXPECT_EQ(info->created, created) << "updated, not made anew";
  EXPECT_EQ(lifecycle.ack_floor(), 40u);
  EXPECT_EQ(broker.find("DAEMON_SYNC", successor()), nullptr);
  EXPECT_NE(log().find("ack_wait 10s -> 30s, max_deliver 5 -> -1"), std::string::npos) << log();
}

TEST_F(Lifecycle, ARightConsumerIsBoundAsItIs) {
  broker.add_consumer("DAEMON_SYNC", desired_consumer_config(spec), 7);
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  EXPECT_EQ(broker.count("create sync-listener"), 0);
  EXPECT_EQ(lifecycle.ack_floor(), 7u);
}

TEST_F(Lifecycle, TheWrongShapeMovesTheWorkToASuccessorAfterTheOldAckFloor) {
  broker.add_consumer("DAEMON_SYNC", plain_push("sync-listener"), 200);
  auto lifecycle = make();
  auto info = lifecycle.bind("DAEMON_SYNC");
  ASSERT_TRUE(info) << info.error().describe();
  EXPECT_EQ(lifecycle.consumer(), successor());
  EXPECT_EQ(info->config.deliver_policy, nats::DeliverPolicy::by_start_sequence);
  EXPECT_EQ(info->config.opt_start_seq, 201u);
  EXPECT_EQ(lifecycle.predecessor(), "sync-listener");
  EXPECT_NE(broker.find("DAEMON_SYNC", "sync-listener"), nullptr) << "not deleted at once";
  EXPECT_NE(log().find("is a plain push durable, which admits a single subscriber; work moves "
                       "to successor " +
                       successor() + ", starting at stream sequence 201"),
            std::string::npos)
      << log();
}

TEST_F(Lifecycle, ASuccessorAPeerAlreadyMadeIsAdoptedNotMadeAgain) {
  broker.add_consumer("DAEMON_SYNC", plain_push("sync-listener"), 200);
  // A peer migrated a moment earlier, when the floor was lower: its start stands.
  broker.add_consumer("DAEMON_SYNC", config_starting_at(spec, 150, successor()));
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  EXPECT_EQ(lifecycle.consumer(), successor());
  EXPECT_EQ(broker.find("DAEMON_SYNC", successor())->config.opt_start_seq, 150u);
  EXPECT_NE(log().find("(already created), starting at stream sequence 150"), std::string::npos)
      << log();
}

TEST_F(Lifecycle, OnceTheOriginalIsRetiredItsSuccessorCarriesTheWork) {
  broker.add_consumer("DAEMON_SYNC", config_starting_at(spec, 201, successor()));
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  EXPECT_EQ(lifecycle.consumer(), successor());
  EXPECT_EQ(broker.find("DAEMON_SYNC", "sync-listener"), nullptr) << "the original is not remade";
}

TEST_F(Lifecycle, ASuccessorOfTheWrongShapeIsAnErrorThatSaysWhatToDelete) {
  broker.add_consumer("DAEMON_SYNC", plain_push("sync-listener"), 200);
  auto wrong = plain_push(successor());
  broker.add_consumer("DAEMON_SYNC", wrong);
  auto lifecycle = make();
  auto info = lifecycle.bind("DAEMON_SYNC");
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().describe().find("delete it, and natsfleet creates it anew"),
            std::string::npos)
      << info.error().describe();
}

TEST_F(Lifecycle, ABrokerThatDoesNotAnswerIsAnErrorNeverAbsence) {
  broker.unreachable = true;
  auto lifecycle = make();
  auto info = lifecycle.bind("DAEMON_SYNC");
  ASSERT_FALSE(info);
  EXPECT_EQ(info.error().code, Errc::timeout);
  EXPECT_EQ(broker.count("create sync-listener"), 0) << "nothing is made on a guess";
}

TEST_F(Lifecycle, ThePredecessorIsRetiredOnlyAfterNobodyWasBoundForTheWholeGrace) {
  broker.add_consumer("DAEMON_SYNC", plain_push("sync-listener"), 200);
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  const ConsumerLifecycle::Clock::time_point t0{};
  auto old = [&]() -> nats::ConsumerInfo& { return broker.consumers["DAEMON_SYNC/sync-listener"]; };

  old().push_bound = true;  // an older release still consumes it
  ASSERT_TRUE(lifecycle.tend_predecessor(t0 + 1s));
  EXPECT_NE(log().find("is still bound"), std::string::npos) << log();
  old().push_bound = false;
  ASSERT_TRUE(lifecycle.tend_predecessor(t0 + 2s));  // unbound from here
  ASSERT_TRUE(lifecycle.tend_predecessor(t0 + 31s));
  EXPECT_EQ(broker.count("delete sync-listener"), 0) << "29 s unbound is not the grace";
  old().push_bound = true;  // bound again: the clock starts over
  ASSERT_TRUE(lifecycle.tend_predecessor(t0 + 33s));
  old().push_bound = false;
  ASSERT_TRUE(lifecycle.tend_predecessor(t0 + 34s));
  ASSERT_TRUE(lifecycle.tend_predecessor(t0 + 63s));
  EXPECT_EQ(broker.count("delete sync-listener"), 0);
  ASSERT_TRUE(lifecycle.tend_predecessor(t0 + 64s));
  EXPECT_EQ(broker.count("delete sync-listener"), 1);
  EXPECT_EQ(broker.find("DAEMON_SYNC", "sync-listener"), nullptr);
  EXPECT_TRUE(lifecycle.predecessor().empty());
  EXPECT_NE(log().find("retired consumer sync-listener on stream DAEMON_SYNC"), std::string::npos);
}

TEST_F(Lifecycle, APredecessorAnotherReplicaRetiredCountsAsRetired) {
  broker.add_consumer("DAEMON_SYNC", plain_push("sync-listener"), 200);
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  broker.consumers.erase("DAEMON_SYNC/sync-listener");
  ASSERT_TRUE(lifecycle.tend_predecessor({}));
  EXPECT_TRUE(lifecycle.predecessor().empty());
  EXPECT_EQ(broker.count("delete sync-listener"), 0);
}

TEST_F(Lifecycle, ARetirementTheBrokerRefusesIsReportedAndTriedAgain) {
  broker.add_consumer("DAEMON_SYNC", plain_push("sync-listener"), 200);
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  const ConsumerLifecycle::Clock::time_point t0{};
  ASSERT_TRUE(lifecycle.tend_predecessor(t0 + 1s));
  broker.unreachable = true;
  // The info read fails first: nothing is decided on it.
  EXPECT_TRUE(lifecycle.tend_predecessor(t0 + 40s));
  broker.unreachable = false;
  ASSERT_TRUE(lifecycle.tend_predecessor(t0 + 41s));
  EXPECT_EQ(broker.find("DAEMON_SYNC", "sync-listener"), nullptr);
}

// A wait that never sleeps: counts how often the lifecycle waited, and for how long.
struct Waits {
  std::vector<std::chrono::milliseconds> asked;
  bool stopping_after = false;
  auto fn() {
    return [this](std::chrono::milliseconds d) {
      asked.push_back(d);
      return !stopping_after;
    };
  }
};

TEST_F(Lifecycle, MissingIsConfirmedAcrossTheWholeWindowBeforeItCounts) {
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  broker.consumers.clear();
  Waits waits;
  const auto found = lifecycle.confirm(waits.fn());
  EXPECT_EQ(found.lookup, Lookup::consumer_missing);
  EXPECT_TRUE(found.error.is_consumer_not_found());
  // Three lookups over two seconds: two waits of a second.
  EXPECT_EQ(waits.asked, (std::vector<std::chrono::milliseconds>{1s, 1s}));
}

TEST_F(Lifecycle, AConsumerANewLeaderBrieflyDidNotKnowIsPresent) {
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  broker.hidden_lookups = 2;
  Waits waits;
  EXPECT_EQ(lifecycle.confirm(waits.fn()).lookup, Lookup::present);
  EXPECT_EQ(waits.asked.size(), 2u);
}

TEST_F(Lifecycle, AnUnreachableBrokerIsNeitherPresentNorMissing) {
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  broker.consumers.clear();
  broker.hidden_lookups = 0;
  Waits waits;
  broker.unreachable = true;
  EXPECT_EQ(lifecycle.confirm(waits.fn()).lookup, Lookup::unreachable);
  EXPECT_TRUE(waits.asked.empty());
}

TEST_F(Lifecycle, AStreamGoneForTheWholeWindowIsStreamMissing) {
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  broker.streams.clear();
  Waits waits;
  EXPECT_EQ(lifecycle.confirm(waits.fn()).lookup, Lookup::stream_missing);
  EXPECT_EQ(waits.asked.size(), 2u);
}

TEST_F(Lifecycle, StoppingEndsTheConfirmationEarly) {
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  broker.consumers.clear();
  Waits waits;
  waits.stopping_after = true;
  EXPECT_EQ(lifecycle.confirm(waits.fn()).lookup, Lookup::consumer_missing);
  EXPECT_EQ(waits.asked.size(), 1u);
}

TEST_F(Lifecycle, ARecreatedConsumerStartsAfterTheLastAckFloorSeen) {
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  lifecycle.saw_ack_floor(120);
  lifecycle.saw_ack_floor(80);  // an older read: the floor never moves down
  broker.consumers.clear();
  auto info = lifecycle.recreate(/*last_handled=*/450);  // shared: another replica's work unknown
  ASSERT_TRUE(info) << info.error().describe();
  EXPECT_EQ(info->config.durable_name, "sync-listener");
  EXPECT_EQ(info->config.deliver_policy, nats::DeliverPolicy::by_start_sequence);
  EXPECT_EQ(info->config.opt_start_seq, 121u);
  EXPECT_NE(log().find("recreated it from stream sequence 121"), std::string::npos) << log();
}

TEST_F(Lifecycle, AStreamCreatedAnewIsReadFromItsStart) {
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  lifecycle.saw_ack_floor(120);
  broker.consumers.clear();
  broker.add_stream("DAEMON_SYNC", 900, "t1");  // refilled past the floor, but a new stream
  auto info = lifecycle.recreate(0);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->config.opt_start_seq, 1u);
  EXPECT_NE(log().find("the stream was created anew since ack floor 120"), std::string::npos);
}

TEST_F(Lifecycle, TheSameStreamShorterThanTheFloorIsReadAfterWhatItHolds) {
  // A failover lost the stream's tail: what it holds was handled, what it stores next takes the
  // sequences after its last (some at or below the old floor). Not the whole stream again.
  auto info = recreate_after_floor_120_on_a_stream_holding(30);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->config.opt_start_seq, 31u);
  EXPECT_NE(log().find("the stream holds up to 30, below ack floor 120"), std::string::npos)
      << log();
}

TEST_F(Lifecycle, AShorterStreamOfUnknownBirthIsReadFromItsStart) {
  broker.add_stream("DAEMON_SYNC", 500, "");  // a broker that does not say when it was made
  auto info = recreate_after_floor_120_on_a_stream_holding(30);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->config.opt_start_seq, 1u);
}

TEST_F(Lifecycle, AConsumerMadeAnewElsewhereIsSaidWithWhereItStarts) {
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  lifecycle.saw_consumer(*broker.find("DAEMON_SYNC", "sync-listener"));  // the same: silent
  EXPECT_EQ(log().find("made anew"), std::string::npos) << log();
  lifecycle.saw_ack_floor(300);
  broker.consumers.clear();
  broker.add_consumer("DAEMON_SYNC", config_starting_at(spec, 250, "sync-listener"), 0);
  EXPECT_EQ(lifecycle.look_up().lookup, Lookup::present);
  EXPECT_NE(log().find("was made anew by another replica or the broker: it delivers from stream "
                       "sequence 250 (it delivered from the stream's start), its ack floor 0, "
                       "the last one seen here 300"),
            std::string::npos)
      << log();
  EXPECT_EQ(lifecycle.ack_floor(), 300u);
}

TEST_F(Lifecycle, AnotherServersCreationTimeIsNotANewConsumer) {
  // Each server of a cluster reports when it made its copy: a leader moving changes `created`.
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  nats::ConsumerInfo info = *broker.find("DAEMON_SYNC", "sync-listener");
  info.created = "2026-12-02T14:13:55.043605483Z";
  lifecycle.saw_consumer(info);
  EXPECT_EQ(log().find("made anew"), std::string::npos) << log();
}

TEST_F(Lifecycle, ARecreationAPeerWonSaysWhereTheWinnerStarts) {
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  lifecycle.saw_ack_floor(120);
  broker.consumers.clear();
  broker.peer_creates_first = config_starting_at(spec, 90, "sync-listener");
  auto info = lifecycle.recreate(0);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->config.opt_start_seq, 90u);
  EXPECT_NE(log().find("using the one the broker holds, which delivers from stream sequence 90"),
            std::string::npos)
      << log();
  EXPECT_EQ(lifecycle.look_up().lookup, Lookup::present);
  EXPECT_EQ(log().find("made anew"), std::string::npos) << log();  // already said
}

TEST_F(Lifecycle, WithNoFloorARecreatedConsumerStartsWhereTheSpecSays) {
  auto lifecycle = make();
  ASSERT_TRUE(lifecycle.bind("DAEMON_SYNC"));
  broker.consumers.clear();
  auto info = lifecycle.recreate(0);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->config.deliver_policy, nats::DeliverPolicy::all);
  EXPECT_NE(log().find("recreated it from the stream's start"), std::string::npos) << log();
}

TEST_F(Lifecycle, AReplicasOwnConsumerStartsAtNewMessagesThenResumesAfterWhatItHandled) {
  auto lifecycle = make(Scope::per_replica);
  auto info = lifecycle.bind("DAEMON_SYNC");
  ASSERT_TRUE(info) << info.error().describe();
  EXPECT_EQ(info->config.name, "status-0a1b2c3d");
  EXPECT_TRUE(info->config.durable_name.empty());
  EXPECT_EQ(info->config.deliver_policy, nats::DeliverPolicy::new_messages);
  EXPECT_GT(info->config.inactive_threshold.count(), 0);

  lifecycle.saw_ack_floor(50);
  broker.consumers.clear();
  auto again = lifecycle.recreate(/*last_handled=*/70);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->config.opt_start_seq, 71u);

  broker.consumers.clear();  // gone while binding again: made anew after the same point
  auto rebound = lifecycle.bind("DAEMON_SYNC", 75);
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->config.opt_start_seq, 76u);
}

TEST_F(Lifecycle, AReplicasOwnConsumerCanStartWithTheLastMessageOfEachSubject) {
  auto lifecycle = make(Scope::per_replica, /*last_per_subject=*/true);
  auto info = lifecycle.bind("DAEMON_SYNC");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->config.deliver_policy, nats::DeliverPolicy::last_per_subject);
}

}  // namespace
}  // namespace natsfleet::fleet
