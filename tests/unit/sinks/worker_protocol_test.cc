#include "sinks/worker_protocol.h"

#include <gtest/gtest.h>

#include "sink_test_util.h"

namespace natsfleet::sinks {
namespace {

using namespace std::chrono_literals;

WorkerAnswer parse_ok(std::string_view line) {
  auto answer = parse_worker_answer(line);
  EXPECT_TRUE(answer) << line << ": " << answer.error().describe();
  return answer ? *answer : WorkerAnswer{};
}

TEST(ParseWorkerAnswer, AckNakAndTerm) {
  auto ack = parse_ok(R"({"id":3,"result":"ack"})");
  EXPECT_EQ(ack.id, 3u);
  EXPECT_EQ(ack.result.disposition.kind(), Disposition::Kind::ack);
  EXPECT_TRUE(ack.result.error.empty());

  auto nak = parse_ok(R"({"id":4,"result":"nak","delay":"5s","error":"smtp busy"})");
  EXPECT_EQ(nak.result.disposition.kind(), Disposition::Kind::nak);
  EXPECT_EQ(nak.result.disposition.delay(), 5s);
  EXPECT_EQ(nak.result.error, "worker: smtp busy");

  auto plain_nak = parse_ok(R"({"id":5,"result":"nak"})");
  EXPECT_EQ(plain_nak.result.disposition.delay(), 0ms);

  auto term = parse_ok(R"({"id":6,"result":"term"})");
  EXPECT_EQ(term.result.disposition.kind(), Disposition::Kind::term);
}

TEST(ParseWorkerAnswer, CarriesPublishesWithoutIds) {
  auto a = parse_ok(
      R"({"id":1,"result":"ack","publish":[{"subject":"a.b","data":"x"},{"subject":"c"}]})");
  ASSERT_EQ(a.result.publish.size(), 2u);
  EXPECT_EQ(a.result.publish[0].subject, "a.b");
  EXPECT_EQ(a.result.publish[0].data, "x");
  EXPECT_EQ(a.result.publish[1].subject, "c");
  EXPECT_EQ(a.result.publish[1].data, "");
  EXPECT_TRUE(a.result.publish[0].msg_id.empty());
}

TEST(ParseWorkerAnswer, UnknownResultAndBadFieldsAreNaks) {
  for (const char* line :
       {R"({"id":1,"result":"maybe"})", R"({"id":1})", R"({"id":1,"result":"nak","delay":"soon"})",
        R"({"id":1,"result":"ack","publish":{"subject":"a"}})",
        R"({"id":1,"result":"ack","publish":[{"data":"x"}]})",
        R"({"id":1,"result":"ack","publish":[{"subject":"a","data":7}]})"}) {
    auto a = parse_ok(line);
    EXPECT_EQ(a.result.disposition.kind(), Disposition::Kind::nak) << line;
    EXPECT_EQ(a.result.disposition.delay(), kWorkerRetryDelay) << line;
    EXPECT_TRUE(a.result.publish.empty()) << line;
    EXPECT_FALSE(a.result.error.empty()) << line;
  }
}

TEST(ParseWorkerAnswer, LinesWithoutAnIdAreRejected) {
  for (const char* line : {"", "hello", "[1,2]", R"({"result":"ack"})", R"({"id":"7"})",
                           R"({"id":-1,"result":"ack"})", R"({"id":1.5,"result":"ack"})"}) {
    auto answer = parse_worker_answer(line);
    ASSERT_FALSE(answer) << line;
    EXPECT_EQ(answer.error().code, Errc::protocol);
    EXPECT_FALSE(answer.error().describe().empty());
  }
}

// The delay grammar itself is base::parse_duration's (tests/unit/base/duration_test.cc).
TEST(ParseWorkerAnswer, StringDelayIsADurationOfAtMostAYear) {
  EXPECT_EQ(parse_ok(R"({"id":1,"result":"nak","delay":"1.5s"})").result.disposition.delay(),
            1500ms);
  EXPECT_EQ(parse_ok(R"({"id":1,"result":"nak","delay":"1m30s"})").result.disposition.delay(), 90s);
  const auto too_long = parse_ok(R"({"id":1,"result":"nak","delay":"99999h"})");
  EXPECT_EQ(too_long.result.disposition.delay(), kWorkerRetryDelay);
  EXPECT_FALSE(too_long.result.error.empty());
  const auto unreadable = parse_ok(R"({"id":1,"result":"nak","delay":"5d"})");
  EXPECT_EQ(unreadable.result.disposition.delay(), kWorkerRetryDelay);
  EXPECT_FALSE(unreadable.result.error.empty());
}

TEST(ParseWorkerAnswer, NumericDelayIsSeconds) {
  auto a = parse_ok(R"({"id":1,"result":"nak","delay":2.5})");
  EXPECT_EQ(a.result.disposition.delay(), 2500ms);
}

TEST(PublishMsgId, JetStreamIdsFollowTheStreamSequence) {
  auto m = testing::js_message("x", 42);
  EXPECT_EQ(publish_msg_id(m, "mail-relay", 0), "mail-relay/MAIL:42:0");
  EXPECT_EQ(publish_msg_id(m, "mail-relay", 3), "mail-relay/MAIL:42:3");
  // A redelivery is the same stream message: the same ids.
  EXPECT_EQ(publish_msg_id(testing::js_message("x", 42, 2), "mail-relay", 0),
            "mail-relay/MAIL:42:0");
}

TEST(PublishMsgId, JetStreamIdsDifferBySubscription) {
  // Two works handling the same source message and publishing into one stream must not dedup
  // each other's derived messages.
  auto m = testing::js_message("x", 42);
  EXPECT_NE(publish_msg_id(m, "mail-relay", 0), publish_msg_id(m, "mail-audit", 0));
  // Also on redelivery: each subscription keeps its own id, and only its own.
  auto again = testing::js_message("x", 42, 3);
  EXPECT_EQ(publish_msg_id(again, "mail-relay", 0), publish_msg_id(m, "mail-relay", 0));
  EXPECT_EQ(publish_msg_id(again, "mail-audit", 0), publish_msg_id(m, "mail-audit", 0));
  EXPECT_NE(publish_msg_id(again, "mail-relay", 0), publish_msg_id(again, "mail-audit", 0));
  EXPECT_NE(publish_msg_id(again, "mail-audit", 0), publish_msg_id(m, "mail-relay", 0));
  // A ':' in a name cannot make two subscriptions on different streams collide.
  Message a("s", "x", {}, Delivery{.stream = "c", .stream_seq = 1});
  Message b("s", "x", {}, Delivery{.stream = "b:c", .stream_seq = 1});
  EXPECT_NE(publish_msg_id(a, "a:b", 0), publish_msg_id(b, "a", 0));
}

TEST(PublishMsgId, CoreIdsHashSubjectAndPayload) {
  auto id = publish_msg_id(testing::core_message("up", "member.7.status"), "status", 1);
  EXPECT_EQ(id.rfind("status/member.7.status:", 0), 0u);
  EXPECT_EQ(id.substr(id.size() - 2), ":1");
  EXPECT_EQ(id, publish_msg_id(testing::core_message("up", "member.7.status"), "status", 1));
  EXPECT_NE(id, publish_msg_id(testing::core_message("down", "member.7.status"), "status", 1));
  EXPECT_NE(id, publish_msg_id(testing::core_message("up", "member.8.status"), "status", 1));
}

TEST(PublishMsgId, CoreIdsDifferBySubscription) {
  auto m = testing::core_message("up", "member.7.status");
  EXPECT_NE(publish_msg_id(m, "status", 0), publish_msg_id(m, "presence", 0));
}

}  // namespace
}  // namespace natsfleet::sinks
