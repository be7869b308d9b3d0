// `natsfleet dead-letters` against a real broker: dead letters made as a work subscription
// publishes them (the Natsfleet-* headers on a dead-letter subject), then listed, replayed once
// and only once, and purged; plus the audit's dead-letter findings.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "natsfleet/dead_letter.h"
#include "support/broker_client.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"

namespace natsfleet::testing {
namespace {

using namespace std::chrono_literals;

using Outcome = CliOutcome;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

constexpr const char* kSecret = "Bearer s3cr3t-t0ken";

// A dead letter as the work subscription publishes one: the original's data and headers, its
// Nats-Msg-Id moved to Natsfleet-Origin-Msg-Id, and where it came from and why.
uint64_t publish_dead_letter(BrokerClient& admin, const std::string& subject,
                             const std::string& data, uint64_t origin_seq,
                             const std::string& reason) {
  Headers h;
  h["Authorization"] = {kSecret};
  h["X-Trace"] = {"trace-" + std::to_string(origin_seq)};
  // An expectation that holds for the dead-letter stream but not for the original subject's: a
  // replay that kept it would be refused.
  h["Nats-Expected-Stream"] = {"DEAD"};
  h[dead_letter::kStream] = {"MAIL"};
  h[dead_letter::kSequence] = {std::to_string(origin_seq)};
  h[dead_letter::kSubscription] = {"mail-relay"};
  h[dead_letter::kSubject] = {"mail.outgoing"};
  h[dead_letter::kMsgId] = {"order-" + std::to_string(origin_seq)};
  h[dead_letter::kDeliveries] = {"5"};
  h[dead_letter::kReason] = {reason};
  h[dead_letter::kTime] = {"2026-11-29T21:49:45.123Z"};
  h["Nats-Msg-Id"] = {dead_letter::message_id("mail-relay", "MAIL", origin_seq)};
  auto stored = admin.api().publish(subject, data, h);
  EXPECT_TRUE(stored) << stored.error().describe();
  return stored ? stored->seq : 0;
}

// MAIL holds the work's subject; DEAD holds the dead-letter subject and another one, whose
// messages are no dead letters and must be left alone.
struct Broker {
  NatsServer server;
  BrokerClient admin{server.url()};
  std::vector<uint64_t> seqs;

  explicit Broker(int dead_letters = 2) {
    admin.create_stream("MAIL", {"mail.outgoing", "mail.retry"});
    admin.create_stream("DEAD", {"mail.dead", "other.kept"});
    admin.publish("other.kept", "not a dead letter");
    for (int i = 0; i < dead_letters; ++i)
      seqs.push_back(publish_dead_letter(admin, "mail.dead", "payload-" + std::to_string(i),
                                         40 + static_cast<uint64_t>(i),
                                         "http 422: address rejected"));
  }
  std::string flags() const { return " --server " + server.url() + " --subject mail.dead"; }
  uint64_t count(const std::string& stream, const std::string& subject) {
    auto n = admin.api().subject_messages(stream, subject);
    EXPECT_TRUE(n) << n.error().describe();
    return n ? *n : 0;
  }
  // The messages on `subject` in `stream`, oldest first.
  std::vector<nats::StoredMessage> messages(const std::string& stream, const std::string& subject) {
    std::vector<nats::StoredMessage> out;
    for (uint64_t seq = 1;;) {
      auto m = admin.api().get_message(stream, seq, subject);
      if (!m) break;
      seq = m->seq + 1;
      out.push_back(std::move(m.value()));
    }
    return out;
  }
};

TEST(DeadLetters, ListShowsWhereEachCameFromAndWhyButNoHeaderValuesOfTheOriginal) {
  Broker broker;
  auto table = run_cli("dead-letters list" + broker.flags());
  ASSERT_EQ(table.code, 0) << explain(table);
  std::printf("%s", table.out.c_str());
  EXPECT_TRUE(has(table.out, "mail.dead: 2 dead letters in stream DEAD")) << table.out;
  for (const char* column : {"SEQ", "DEAD-LETTERED AT", "SUBSCRIPTION", "ORIGIN SUBJECT", "ORIGIN",
                             "DELIVERIES", "BYTES", "REASON"})
    EXPECT_TRUE(has(table.out, column)) << column;
  EXPECT_TRUE(has(table.out, "MAIL:40")) << table.out;
  EXPECT_TRUE(has(table.out, "MAIL:41")) << table.out;
  EXPECT_TRUE(has(table.out, "mail-relay")) << table.out;
  EXPECT_TRUE(has(table.out, "http 422: address rejected")) << table.out;
  EXPECT_TRUE(has(table.out, "2026-11-29T21:49:45.123Z")) << table.out;

  auto json = run_cli("dead-letters list --json" + broker.flags());
  ASSERT_EQ(json.code, 0) << explain(json);
  const auto report = nlohmann::json::parse(json.out);
  ASSERT_EQ(report["subjects"].size(), 1u);
  const auto& listed = report["subjects"][0];
  EXPECT_EQ(listed["stream"], "DEAD");
  ASSERT_EQ(listed["dead_letters"].size(), 2u) << "other.kept is no dead letter";
  const auto& first = listed["dead_letters"][0];
  EXPECT_EQ(first["seq"], broker.seqs[0]);
  EXPECT_EQ(first["origin_subject"], "mail.outgoing");
  EXPECT_EQ(first["origin_stream"], "MAIL");
  EXPECT_EQ(first["origin_seq"], 40);
  EXPECT_EQ(first["deliveries"], 5);
  EXPECT_EQ(first["bytes"], std::string("payload-0").size());

  for (const Outcome& o : {table, json}) {
    EXPECT_FALSE(has(o.out, "s3cr3t")) << "a header value of the original was shown";
    EXPECT_FALSE(has(o.out, "trace-40")) << "a header value of the original was shown";
    EXPECT_FALSE(has(o.out, "payload-0")) << "the data was shown";
  }
  EXPECT_EQ(broker.count("DEAD", "mail.dead"), 2u) << "list changed the stream";
}

TEST(DeadLetters, ReplayPutsEachBackOnItsSubjectOnceAndThenIsDone) {
  Broker broker;
  auto o = run_cli("dead-letters replay" + broker.flags());
  ASSERT_EQ(o.code, 0) << explain(o);
  std::printf("%s", o.out.c_str());
  EXPECT_TRUE(has(o.out, "replayed DEAD:" + std::to_string(broker.seqs[0]) + " -> mail.outgoing"))
      << o.out;
  EXPECT_TRUE(has(o.out, "replayed 2 of 2 dead letters")) << o.out;

  const auto replayed = broker.messages("MAIL", "mail.outgoing");
  ASSERT_EQ(replayed.size(), 2u);
  for (size_t i = 0; i < replayed.size(); ++i) {
    const auto& m = replayed[i];
    EXPECT_EQ(m.data, "payload-" + std::to_string(i));
    EXPECT_EQ(m.headers.at("Authorization"), std::vector<std::string>{kSecret});
    EXPECT_EQ(m.headers.at("X-Trace"), std::vector<std::string>{"trace-" + std::to_string(40 + i)});
    EXPECT_EQ(m.headers.at("Nats-Msg-Id"),
              std::vector<std::string>{"natsfleet-replay:DEAD:" + std::to_string(broker.seqs[i])});
    for (const auto& [key, values] : m.headers) {
      EXPECT_NE(key.rfind("Natsfleet-", 0), 0u) << key;
      EXPECT_NE(key.rfind("Nats-Expected-", 0), 0u) << key;
    }
  }
  EXPECT_EQ(broker.count("DEAD", "mail.dead"), 0u);
  EXPECT_EQ(broker.count("DEAD", "other.kept"), 1u);

  auto again = run_cli("dead-letters replay" + broker.flags());
  EXPECT_EQ(again.code, 0) << explain(again);
  EXPECT_TRUE(has(again.out, "replayed 0 of 0 dead letters")) << again.out;
  EXPECT_EQ(broker.count("MAIL", "mail.outgoing"), 2u) << "a second replay published again";
}

TEST(DeadLetters, AReplayCutOffBeforeTheDeleteIsStoredOnceWhenRunAgain) {
  Broker broker(1);
  // An earlier replay stored the message and died before deleting the dead letter.
  auto dead = broker.admin.api().get_message("DEAD", broker.seqs[0]);
  ASSERT_TRUE(dead);
  Headers h;
  h["Nats-Msg-Id"] = {"natsfleet-replay:DEAD:" + std::to_string(broker.seqs[0])};
  ASSERT_TRUE(broker.admin.api().publish("mail.outgoing", dead->data, h));

  auto o = run_cli("dead-letters replay" + broker.flags());
  ASSERT_EQ(o.code, 0) << explain(o);
  EXPECT_TRUE(has(o.out, "stored by an earlier try")) << o.out;
  EXPECT_EQ(broker.count("MAIL", "mail.outgoing"), 1u) << "replayed twice";
  EXPECT_EQ(broker.count("DEAD", "mail.dead"), 0u);
}

TEST(DeadLetters, ReplayToAnotherSubjectOnlyTheChosenSequence) {
  Broker broker;
  const std::string seq = std::to_string(broker.seqs[1]);
  auto o = run_cli("dead-letters replay --to mail.retry --seq " + seq + broker.flags());
  ASSERT_EQ(o.code, 0) << explain(o);
  EXPECT_TRUE(has(o.out, "replayed DEAD:" + seq + " -> mail.retry")) << o.out;
  const auto retried = broker.messages("MAIL", "mail.retry");
  ASSERT_EQ(retried.size(), 1u);
  EXPECT_EQ(retried[0].data, "payload-1");
  EXPECT_EQ(broker.count("MAIL", "mail.outgoing"), 0u);
  const auto left = broker.messages("DEAD", "mail.dead");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].seq, broker.seqs[0]);

  // A sequence that is no dead letter (the other subject's message, or nothing) is named.
  auto wrong = run_cli("dead-letters replay --seq 1 --seq 999" + broker.flags());
  EXPECT_EQ(wrong.code, 1) << explain(wrong);
  EXPECT_TRUE(has(wrong.err, "sequence 1: no dead letter there on mail.dead")) << explain(wrong);
  EXPECT_TRUE(has(wrong.err, "sequence 999: no dead letter there")) << explain(wrong);
  EXPECT_EQ(broker.count("DEAD", "other.kept"), 1u);
}

TEST(DeadLetters, ADeadLetterWithNoOriginSubjectFailsByNameAndStays) {
  Broker broker(1);
  auto bare = broker.admin.api().publish("mail.dead", "no origin", {});
  ASSERT_TRUE(bare);
  auto o = run_cli("dead-letters replay" + broker.flags());
  EXPECT_EQ(o.code, 1) << explain(o);
  EXPECT_TRUE(has(o.err, "DEAD:" + std::to_string(bare->seq) +
                             ": no Natsfleet-Origin-Subject header: give --to SUBJECT"))
      << explain(o);
  EXPECT_TRUE(has(o.out, "replayed 1 of 2 dead letters")) << o.out;
  EXPECT_EQ(broker.count("DEAD", "mail.dead"), 1u);
}

TEST(DeadLetters, PurgeDeletesTheChosenThenAllAndNothingElse) {
  Broker broker(3);
  auto one = run_cli("dead-letters purge --seq " + std::to_string(broker.seqs[0]) + broker.flags());
  ASSERT_EQ(one.code, 0) << explain(one);
  EXPECT_EQ(broker.count("DEAD", "mail.dead"), 2u);

  auto all = run_cli("dead-letters purge" + broker.flags());
  ASSERT_EQ(all.code, 0) << explain(all);
  EXPECT_TRUE(has(all.out, "purged 2 dead letters from mail.dead (stream DEAD)")) << all.out;
  EXPECT_EQ(broker.count("DEAD", "mail.dead"), 0u);
  EXPECT_EQ(broker.count("DEAD", "other.kept"), 1u);
  EXPECT_EQ(broker.count("MAIL", "mail.outgoing"), 0u);
}

TEST(DeadLetters, ASubjectNoStreamHoldsExitsTwoNamingIt) {
  Broker broker(1);
  auto o = run_cli("dead-letters replay --server " + broker.server.url() +
                   " --subject mail.dead --subject nowhere.dead");
  EXPECT_EQ(o.code, 2) << explain(o);
  EXPECT_TRUE(has(o.err, "no stream holds dead-letter subject 'nowhere.dead'")) << explain(o);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(broker.count("DEAD", "mail.dead"), 1u) << "nothing is done when a subject is missing";
}

TEST(DeadLetters, UsageAndAnUnreachableBrokerExitTwo) {
  auto no_server = run_cli("dead-letters list --subject mail.dead");
  EXPECT_EQ(no_server.code, 2) << explain(no_server);
  EXPECT_TRUE(has(no_server.err, "no broker")) << explain(no_server);

  auto wildcard = run_cli("dead-letters list --server nats://127.0.0.1:1 --subject 'mail.*'");
  EXPECT_EQ(wildcard.code, 2) << explain(wildcard);
  EXPECT_TRUE(has(wildcard.err, "has a wildcard")) << explain(wildcard);

  const std::string url = "nats://127.0.0.1:" + std::to_string(free_loopback_port());
  auto unreachable = run_cli("dead-letters list --server " + url + " --subject mail.dead");
  EXPECT_EQ(unreachable.code, 2) << explain(unreachable);
  EXPECT_TRUE(has(unreachable.err, "cannot reach " + url + ": Connection refused"))
      << explain(unreachable);
}

TEST(DeadLetters, ConfigGivesTheServersAndEveryWorksSubject) {
  Broker broker(1);
  TempDir dir;
  const std::string path = dir.path() + "/svc.toml";
  std::ofstream(path) << "name = \"svc\"\nservers = [\"" << broker.server.url() << "\"]\n"
                      << "[[work]]\nname = \"mail-relay\"\nsubject = \"mail.outgoing\"\n"
                      << "dead_letter = \"mail.dead\"\n"
                      << "sink = { type = \"file\", path = \"out.jsonl\" }\n";
  auto o = run_cli("dead-letters list --config " + path);
  ASSERT_EQ(o.code, 0) << explain(o);
  EXPECT_TRUE(has(o.out, "mail.dead: 1 dead letter in stream DEAD")) << o.out;
}

TEST(Audit, ReportsDeadLettersAndAMissingDeadLetterStream) {
  Broker broker(2);
  TempDir dir;
  const std::string path = dir.path() + "/svc.toml";
  std::ofstream(path) << "name = \"svc\"\nservers = [\"" << broker.server.url() << "\"]\n"
                      << "[[work]]\nname = \"mail-relay\"\nsubject = \"mail.outgoing\"\n"
                      << "dead_letter = \"mail.dead\"\n"
                      << "sink = { type = \"file\", path = \"out.jsonl\" }\n"
                      << "[[work]]\nname = \"retry\"\nsubject = \"mail.retry\"\n"
                      << "dead_letter = \"retry.dead\"\n"
                      << "sink = { type = \"file\", path = \"out.jsonl\" }\n";
  auto o = run_cli("audit --config " + path + " --interval 300ms --json");
  ASSERT_EQ(o.code, 1) << explain(o);
  const auto report = nlohmann::json::parse(o.out);
  std::set<std::string> found;
  for (const auto& f : report["findings"]) {
    const std::string rule = f["finding"];
    found.insert(rule + "/" + f["consumer"].get<std::string>());
    if (rule == "dead-letters") {
      EXPECT_EQ(f["stream"], "DEAD");
      EXPECT_TRUE(has(f["evidence"], "'mail.dead' holds 2 dead letters")) << f;
      EXPECT_FALSE(has(f["evidence"], "growing")) << f;
    }
    if (rule == "dead-letter-stream-missing") {
      EXPECT_TRUE(f["stream"].is_null());
      EXPECT_TRUE(has(f["evidence"], "'retry.dead'")) << f;
    }
  }
  EXPECT_TRUE(found.count("dead-letters/mail-relay")) << o.out;
  EXPECT_TRUE(found.count("dead-letter-stream-missing/retry")) << o.out;

  // Once replayed, the dead letters are no finding any more.
  ASSERT_EQ(run_cli("dead-letters replay" + broker.flags()).code, 0);
  auto after = run_cli("audit --config " + path + " --interval 300ms --json");
  EXPECT_FALSE(has(after.out, "\"dead-letters\"")) << after.out;
}

}  // namespace
}  // namespace natsfleet::testing
