// What a replay sends and what a listing shows, decided from a stored dead letter alone.
#include "deadletters/dead_letter_entry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "deadletters/listing.h"
#include "natsfleet/dead_letter.h"

namespace natsfleet::deadletters {
namespace {

DeadLetterEntry entry() {
  nats::StoredMessage m;
  m.subject = "mail.dead";
  m.seq = 12;
  m.time = "2026-11-30T08:00:00.987654321Z";
  m.data = "the payload";
  m.headers = {{"Authorization", {"Bearer secret"}},
               {"X-Tag", {"a", "b"}},
               {"Nats-Msg-Id", {"dead-letter:mail-relay:MAIL:42"}},
               {"Nats-Expected-Last-Sequence", {"41"}},
               {dead_letter::kStream, {"MAIL"}},
               {dead_letter::kSequence, {"42"}},
               {dead_letter::kSubscription, {"mail-relay"}},
               {dead_letter::kSubject, {"mail.outgoing"}},
               {dead_letter::kMsgId, {"order-7"}},
               {dead_letter::kDeliveries, {"5"}},
               {dead_letter::kReason, {"http 422:\nrejected"}},
               {dead_letter::kTime, {"2026-11-29T21:49:45.123456Z"}}};
  return describe_entry(m, "MAIL_DEAD_LETTERS");
}

TEST(DeadLetterEntry, ReadsItsOriginFromTheNatsfleetHeaders) {
  const DeadLetterEntry e = entry();
  EXPECT_EQ(e.stream, "MAIL_DEAD_LETTERS");
  EXPECT_EQ(e.seq, 12u);
  EXPECT_EQ(e.origin_subject, "mail.outgoing");
  EXPECT_EQ(e.origin_stream, "MAIL");
  EXPECT_EQ(e.origin_seq, "42");
  EXPECT_EQ(e.subscription, "mail-relay");
  EXPECT_EQ(e.deliveries, "5");
  EXPECT_EQ(e.dead_lettered_at, "2026-11-29T21:49:45.123456Z");
}

TEST(ReplayHeaders, KeepTheOriginalsButNoNatsfleetIdOrExpectations) {
  const Headers h = replay_headers(entry());
  EXPECT_EQ(h.at("Authorization"), std::vector<std::string>{"Bearer secret"});
  EXPECT_EQ(h.at("X-Tag"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(h.at("Nats-Msg-Id"), std::vector<std::string>{"natsfleet-replay:MAIL_DEAD_LETTERS:12"});
  EXPECT_EQ(h.size(), 3u) << "Natsfleet-* and Nats-Expected-* are dropped";
  EXPECT_EQ(replay_msg_id("MAIL_DEAD_LETTERS", 12), "natsfleet-replay:MAIL_DEAD_LETTERS:12");
}

TEST(Listing, TableShowsOriginAndReasonOnOneLineAndNoOriginalHeaderOrData) {
  const std::string table = render_table({{"mail.dead", "MAIL_DEAD_LETTERS", {entry()}}});
  EXPECT_NE(table.find("mail.dead: 1 dead letter in stream MAIL_DEAD_LETTERS\n"), std::string::npos)
      << table;
  EXPECT_NE(table.find("2026-11-29T21:49:45.123Z"), std::string::npos) << table;
  EXPECT_NE(table.find("MAIL:42"), std::string::npos) << table;
  EXPECT_NE(table.find("http 422: rejected"), std::string::npos) << "a line break is a space";
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 3) << table;
  EXPECT_EQ(table.find("secret"), std::string::npos) << table;
  EXPECT_EQ(table.find("the payload"), std::string::npos) << table;
  EXPECT_EQ(table.find("order-7"), std::string::npos) << table;

  EXPECT_EQ(render_table({{"mail.dead", "D", {}}}), "mail.dead: no dead letters in stream D\n");
}

TEST(Listing, JsonCarriesNumbersAndNullForWhatTheHeadersDoNotHold) {
  DeadLetterEntry bare = entry();
  bare.deliveries.clear();
  bare.origin_seq = "not a number";
  const auto j = nlohmann::json::parse(render_json({{"mail.dead", "D", {entry(), bare}}}));
  const auto& first = j["subjects"][0]["dead_letters"][0];
  EXPECT_EQ(j["subjects"][0]["count"], 2);
  EXPECT_EQ(first["origin_seq"], 42);
  EXPECT_EQ(first["deliveries"], 5);
  EXPECT_EQ(first["bytes"], 11);
  EXPECT_EQ(first["stored_at"], "2026-11-30T08:00:00.987654321Z");
  EXPECT_TRUE(j["subjects"][0]["dead_letters"][1]["deliveries"].is_null());
  EXPECT_TRUE(j["subjects"][0]["dead_letters"][1]["origin_seq"].is_null());
  EXPECT_EQ(j.dump().find("secret"), std::string::npos);
}

TEST(Listing, ShortTimeKeepsMilliseconds) {
  EXPECT_EQ(short_time("2026-11-30T08:00:00.987654321Z"), "2026-11-30T08:00:00.987Z");
  EXPECT_EQ(short_time("2026-11-30T08:00:00.9Z"), "2026-11-30T08:00:00.9Z");
  EXPECT_EQ(short_time("2026-11-30T08:00:00Z"), "2026-11-30T08:00:00Z");
}

}  // namespace
}  // namespace natsfleet::deadletters
