// A work subject belongs to a stream when every subject it can match is one of the stream's.
#include "base/subject_match.h"

#include <gtest/gtest.h>

namespace natsfleet::base {
namespace {

struct Case {
  const char* subject;
  const char* pattern;
  bool within;
};

class SubjectWithin : public ::testing::TestWithParam<Case> {};

TEST_P(SubjectWithin, MatchesTokenByToken) {
  const Case& c = GetParam();
  EXPECT_EQ(subject_within(c.subject, c.pattern), c.within) << c.subject << " in " << c.pattern;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SubjectWithin,
    ::testing::Values(Case{"mail.outgoing", "mail.outgoing", true},
                      Case{"mail.outgoing", "mail.incoming", false},
                      Case{"mail.outgoing", "mail.*", true}, Case{"mail.outgoing", "mail.>", true},
                      Case{"mail.outgoing.eu", "mail.*", false},
                      Case{"mail.outgoing.eu", "mail.>", true}, Case{"mail", "mail.>", false},
                      Case{"mail", "mail.*", false}, Case{"mail.*", "mail.>", true},
                      Case{"mail.*", "mail.*", true}, Case{"mail.*", "mail.outgoing", false},
                      Case{"mail.>", "mail.*", false}, Case{"mail.>", "mail.>", true},
                      Case{"a.b.c", ">", true}, Case{"a.*.c", "a.b.c", false},
                      Case{"a.*.c", "*.*.c", true}, Case{"a..b", "a.*.b", false}));

TEST(SubjectWithinAny, TriesEveryPattern) {
  EXPECT_TRUE(subject_within_any("jobs.run", {"mail.>", "jobs.*"}));
  EXPECT_FALSE(subject_within_any("jobs.run.now", {"mail.>", "jobs.*"}));
  EXPECT_FALSE(subject_within_any("jobs.run", {}));
}

}  // namespace
}  // namespace natsfleet::base
