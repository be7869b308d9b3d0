#include "natsfleet/validate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <functional>
#include <string>
#include <vector>

namespace natsfleet {
namespace {

TEST(Validate, Subjects) {
  EXPECT_TRUE(check_subject("mail.outgoing").ok());
  EXPECT_TRUE(check_subject("member.*.status").ok());
  EXPECT_TRUE(check_subject("logs.>").ok());
  EXPECT_FALSE(check_subject("").ok());
  EXPECT_FALSE(check_subject("mail..outgoing").ok());
  EXPECT_FALSE(check_subject(".mail").ok());
  EXPECT_FALSE(check_subject("mail.").ok());
  EXPECT_FALSE(check_subject("mail outgoing").ok());
  EXPECT_FALSE(check_subject("logs.>.x").ok());
  EXPECT_FALSE(check_subject("logs.a*").ok());
  EXPECT_FALSE(check_subject("logs.*", false).ok());
}

TEST(Validate, Names) {
  EXPECT_TRUE(check_name("mail-relay").ok());
  EXPECT_FALSE(check_name("").ok());
  EXPECT_FALSE(check_name("mail.relay").ok());
  EXPECT_FALSE(check_name("mail relay").ok());
  EXPECT_FALSE(check_name("mail*").ok());
  EXPECT_EQ(check_name("").error().code, Errc::invalid_argument);
  EXPECT_EQ(check_name("").error().message, "name is empty");
}

TEST(Validate, WorkSpecCombinations) {
  WorkSpec ok{.name = "w", .subject = "a.b"};
  EXPECT_TRUE(validate_work(ok).ok());
  WorkSpec starved = ok;
  starved.flow.concurrency = 8;
  starved.flow.max_ack_pending = 4;
  EXPECT_FALSE(validate_work(starved).ok());
  WorkSpec no_deliver = ok;
  no_deliver.failure.max_deliver = 0;
  EXPECT_FALSE(validate_work(no_deliver).ok());
}

// Every number in a spec has a range: its bounds pass, one step beyond is refused with the field's
// name, whatever a caller of the library sets (the values a daemon config can no longer reach too).
struct SpecRange {
  std::string field;
  std::function<void(WorkSpec&, long long)> set_work;            // null: broadcast
  std::function<void(BroadcastSpec&, long long)> set_broadcast;  // null: work
  long long min;
  long long max;
  bool is_int = true;
  bool check_below = true;  // false: below min is judged against another field first
};

std::ostream& operator<<(std::ostream& out, const SpecRange& r) { return out << r.field; }

using std::chrono::milliseconds;
constexpr auto kHour = 3'600'000LL;

const SpecRange kSpecRanges[] = {
    {"concurrency", [](WorkSpec& s, long long v) { s.flow.concurrency = int(v); }, nullptr, 1,
     1024},
    {"max_ack_pending", [](WorkSpec& s, long long v) { s.flow.max_ack_pending = int(v); }, nullptr,
     1, 1'000'000},
    {"max_deliver", [](WorkSpec& s, long long v) { s.failure.max_deliver = int(v); }, nullptr, -1,
     1'000'000},
    {"batch", [](WorkSpec& s, long long v) { s.flow.batch = int(v); }, nullptr, 0, 10'000},
    {"ack_wait", [](WorkSpec& s, long long v) { s.flow.ack_wait = milliseconds(v); }, nullptr, 200,
     24 * kHour, false},
    {"heartbeat",
     [](WorkSpec& s, long long v) {
       s.flow.ack_wait = milliseconds(24 * kHour);  // a heartbeat is at most a quarter of it
       s.flow.heartbeat = milliseconds(v);
     },
     nullptr, 50, 60'000, false},
    {"pull_expires", [](WorkSpec& s, long long v) { s.flow.pull_expires = milliseconds(v); },
     nullptr, 100, 600'000, false},
    {"lease",
     [](WorkSpec& s, long long v) {
       s.subject = "orders.*";
       s.per_key.emplace();
       s.per_key->key_token = 2;
       s.per_key->lease = milliseconds(v);
     },
     nullptr, 1'000, 600'000, false},
    {"nak_backoff_max",
     [](WorkSpec& s, long long v) { s.failure.nak_backoff_max = milliseconds(v); }, nullptr, 1'000,
     24 * kHour, false, false},
    {"retry_max", [](WorkSpec& s, long long v) { s.failure.retry_max = milliseconds(v); }, nullptr,
     500, 24 * kHour, false, false},
    {"concurrency", nullptr, [](BroadcastSpec& s, long long v) { s.concurrency = int(v); }, 1,
     1024},
    {"max_queued", nullptr, [](BroadcastSpec& s, long long v) { s.max_queued = int(v); }, 1,
     1'000'000},
    {"key_token", nullptr, [](BroadcastSpec& s, long long v) { s.key_token = int(v); }, 0, 256},
    {"heartbeat", nullptr,
     [](BroadcastSpec& s, long long v) {
       s.source = BroadcastSource::jetstream;
       s.heartbeat = milliseconds(v);
     },
     50, 60'000, false},
    {"stream_max_age", nullptr,
     [](BroadcastSpec& s, long long v) {
       s.source = BroadcastSource::jetstream;
       s.stream = "S";
       s.create_stream = true;
       s.stream_max_age = milliseconds(v);
     },
     1'000, 24 * kHour * 3650, false},
};

class SpecRangeTest : public testing::TestWithParam<SpecRange> {};

TEST_P(SpecRangeTest, BoundsPassAndBeyondIsRefusedByName) {
  const SpecRange& r = GetParam();
  auto problem = [&](long long value) -> std::string {
    auto checked = [&] {
      if (r.set_work) {
        WorkSpec spec{.name = "w", .subject = "a.b"};
        spec.flow.max_ack_pending = 1'000'000;  // no concurrency is refused for it
        r.set_work(spec, value);
        return validate_work(spec);
      }
      BroadcastSpec spec{.name = "b", .subject = "a.b"};
      r.set_broadcast(spec, value);
      return validate_broadcast(spec);
    }();
    return checked ? "" : checked.error().message;
  };
  EXPECT_EQ(problem(r.min), "") << r.field << " = " << r.min;
  EXPECT_EQ(problem(r.max), "") << r.field << " = " << r.max;
  for (long long bad : {r.min - 1, r.max + 1, static_cast<long long>(INT_MAX), LLONG_MAX / 2}) {
    if (bad >= r.min && bad <= r.max) continue;
    if (bad == r.min - 1 && !r.check_below) continue;
    if (r.is_int && bad > INT_MAX) continue;  // the field cannot hold it
    const std::string why = problem(bad);
    EXPECT_NE(why.find(r.field), std::string::npos) << r.field << " = " << bad << ": " << why;
  }
}

INSTANTIATE_TEST_SUITE_P(Validate, SpecRangeTest, testing::ValuesIn(kSpecRanges),
                         [](const testing::TestParamInfo<SpecRange>& param) {
                           return std::string(param.param.set_work ? "work_" : "broadcast_") +
                                  param.param.field;
                         });

TEST(Validate, AHeartbeatIsAtMostAQuarterOfAckWaitAndZeroTakesAQuarter) {
  WorkSpec spec{.name = "w", .subject = "a.b"};
  spec.flow.ack_wait = std::chrono::seconds(1);
  EXPECT_TRUE(validate_work(spec).ok());  // heartbeat 0: a quarter of ack_wait
  EXPECT_EQ(heartbeat_of(spec), milliseconds(250));
  spec.flow.heartbeat = milliseconds(250);
  EXPECT_TRUE(validate_work(spec).ok());
  spec.flow.heartbeat = milliseconds(251);
  EXPECT_EQ(validate_work(spec).error().message,
            "heartbeat 251ms is more than a quarter of ack_wait 1s: two missed heartbeats must be "
            "noticed well within ack_wait (leave it 0 for a quarter of ack_wait, at most 5s)");
  EXPECT_EQ(heartbeat_of(spec), milliseconds(251));

  WorkSpec derived{.name = "w", .subject = "a.b"};
  EXPECT_EQ(heartbeat_of(derived), std::chrono::seconds(5));  // ack_wait 30s: at most 5s
  derived.flow.ack_wait = Limits::kMinAckWait;
  EXPECT_TRUE(validate_work(derived).ok());
  EXPECT_EQ(heartbeat_of(derived), Limits::kMinHeartbeat);
}

// A broadcast's fields for the other source are refused, not ignored.
TEST(Validate, ABroadcastTakesOnlyItsSourcesFields) {
  const BroadcastSpec core{.name = "b", .subject = "a.*"};
  EXPECT_TRUE(validate_broadcast(core).ok());
  for (auto set : std::vector<void (*)(BroadcastSpec&)>{
           [](BroadcastSpec& s) { s.stream = "S"; },
           [](BroadcastSpec& s) { s.create_stream = true; },
           [](BroadcastSpec& s) { s.start_with_last_per_subject = true; }}) {
    BroadcastSpec spec = core;
    set(spec);
    auto refused = validate_broadcast(spec);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("apply to source = jetstream only"), std::string::npos)
        << refused.error().message;
  }
  BroadcastSpec stored = core;
  stored.source = BroadcastSource::jetstream;
  EXPECT_TRUE(validate_broadcast(stored).ok());
  stored.key_token = 2;
  auto refused = validate_broadcast(stored);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("key_token applies to source = core only"),
            std::string::npos);
}

TEST(Validate, DeadLetterIsAPlainSubjectTheWorkDoesNotConsume) {
  WorkSpec spec{.name = "w", .subject = "mail.*"};
  spec.failure.dead_letter = "dead.mail";
  EXPECT_TRUE(validate_work(spec).ok());
  spec.failure.dead_letter = "mail.dead.x";  // more tokens than mail.* matches
  EXPECT_TRUE(validate_work(spec).ok());
  for (const char* bad : {"dead.*", "dead.>", "dead mail", "dead..mail"}) {
    spec.failure.dead_letter = bad;
    EXPECT_NE(validate_work(spec).error().message.find("dead_letter"), std::string::npos) << bad;
  }
  for (const char* fed_back : {"mail.dead", "mail.x"}) {
    spec.failure.dead_letter = fed_back;
    EXPECT_NE(validate_work(spec).error().message.find("consumed again"), std::string::npos)
        << fed_back;
  }
  spec.subject = "mail.>";
  spec.failure.dead_letter = "mail.dead.letters";
  EXPECT_NE(validate_work(spec).error().message.find("consumed again"), std::string::npos);
  spec.subject = "mail.outgoing";
  spec.failure.dead_letter = "mail.outgoing";
  EXPECT_NE(validate_work(spec).error().message.find("consumed again"), std::string::npos);
}

TEST(Validate, SeveralSubjectsMustNotOverlapNorFightTheOneSubject) {
  WorkSpec spec{.name = "w"};
  spec.subjects = {"orders.created", "orders.paid", "refunds.*"};
  EXPECT_TRUE(validate_work(spec).ok());
  spec.subject = "orders.created";  // the first, as add_work leaves it
  EXPECT_TRUE(validate_work(spec).ok());
  spec.subject = "orders.paid";
  EXPECT_EQ(validate_work(spec).error().message,
            "subject 'orders.paid' and subjects are both set: set one of them");
  spec.subject.clear();
  struct Case {
    std::vector<std::string> subjects;
    std::string overlapping;  // empty: valid
  };
  for (const Case& c : std::vector<Case>{
           {{"orders.*", "orders.paid"}, "'orders.*' and 'orders.paid'"},
           {{"orders.>", "orders.a.b"}, "'orders.>' and 'orders.a.b'"},
           {{"a.*.c", "a.b.*"}, "'a.*.c' and 'a.b.*'"},
           {{"a.b", "a.b"}, "'a.b' and 'a.b'"},
           {{"a.*", "a.b.c"}, ""},
           {{"a.b", "a.b.c"}, ""},
           {{"a.*.c", "a.b.d"}, ""},
       }) {
    spec.subjects = c.subjects;
    const auto checked = validate_work(spec);
    if (c.overlapping.empty()) {
      EXPECT_TRUE(checked.ok()) << c.subjects[0] << " " << c.subjects[1];
    } else {
      ASSERT_FALSE(checked.ok()) << c.overlapping;
      EXPECT_NE(checked.error().message.find(c.overlapping + " overlap"), std::string::npos)
          << checked.error().message;
    }
  }
  spec.subjects = {"orders.created", "orders..paid"};
  EXPECT_NE(validate_work(spec).error().message.find("subjects: "), std::string::npos);
  spec.subjects = {"orders.created", "orders.paid"};
  spec.failure.dead_letter = "orders.paid";
  EXPECT_NE(validate_work(spec).error().message.find("consumed again"), std::string::npos);
  spec.failure.dead_letter.clear();
  spec.per_key.emplace();
  spec.per_key->key_token = 2;
  EXPECT_EQ(validate_work(spec).error().message,
            "ordering = per-key takes one subject, not several");
}

}  // namespace
}  // namespace natsfleet
