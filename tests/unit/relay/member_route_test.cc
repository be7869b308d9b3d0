#include "relay/member_route.h"

#include <gtest/gtest.h>

#include <string>

#include "natsfleet/relay.h"

namespace natsfleet::relay {
namespace {

TEST(MemberRoute, AcceptsTheSafeAlphabetUpTo64Characters) {
  // Every valid id is a valid relay key (one token of the relay's subject): no dot, no wildcard.
  EXPECT_TRUE(valid_member_id("alice"));
  EXPECT_TRUE(valid_member_id("A-Z_az:0@9"));
  EXPECT_TRUE(valid_member_id(std::string(64, 'x')));
  EXPECT_FALSE(valid_member_id(""));
  EXPECT_FALSE(valid_member_id(std::string(65, 'x')));
  for (const char* bad :
       {"a b", "a/b", "a%b", "a+b", "a*b", "a.b", "a>", "ali\xc3\xa9", "a\nb", "<script>"}) {
    EXPECT_FALSE(valid_member_id(bad)) << bad;
  }
  for (const char* good : {"alice", "A-Z_az:0@9", "bob@example"})
    EXPECT_TRUE(check_relay_key(good).ok()) << good;
}

TEST(MemberRoute, PercentDecodingRejectsMalformedEscapes) {
  EXPECT_EQ(percent_decode("alice%40example"), "alice@example");
  EXPECT_EQ(percent_decode("%2e%2E"), "..");
  EXPECT_EQ(percent_decode("a+b"), "a+b");
  EXPECT_EQ(percent_decode(""), "");
  EXPECT_FALSE(percent_decode("%"));
  EXPECT_FALSE(percent_decode("a%4"));
  EXPECT_FALSE(percent_decode("%zz"));
}

TEST(MemberRoute, TakesTheMemberParameterAndIgnoresOthers) {
  auto member = member_from_query("member=alice");
  ASSERT_TRUE(member) << member.error().describe();
  EXPECT_EQ(*member, "alice");
  member = member_from_query("v=2&member=bob%40example&x");
  ASSERT_TRUE(member) << member.error().describe();
  EXPECT_EQ(*member, "bob@example");
  member = member_from_query("%6Dember=carol");  // the key may be escaped too
  ASSERT_TRUE(member) << member.error().describe();
  EXPECT_EQ(*member, "carol");
}

TEST(MemberRoute, RefusesMissingRepeatedMalformedOrInvalidMembers) {
  struct Case {
    const char* query;
    const char* message;
  };
  for (const Case& c :
       {Case{"", "missing"}, Case{"members=alice", "missing"}, Case{"member=a&member=b", "twice"},
        Case{"member=%zz", "escaped"}, Case{"member=", "1 to 64"}, Case{"member", "1 to 64"},
        Case{"member=a%2Fb", "1 to 64"}, Case{"member=a%00b", "1 to 64"},
        Case{"member=a%20b", "1 to 64"}}) {
    const auto member = member_from_query(c.query);
    ASSERT_FALSE(member) << c.query;
    EXPECT_NE(member.error().describe().find(c.message), std::string::npos)
        << c.query << ": " << member.error().describe();
  }
}

}  // namespace
}  // namespace natsfleet::relay
