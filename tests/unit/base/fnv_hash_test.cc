#include "base/fnv_hash.h"

#include <gtest/gtest.h>

#include <string>

namespace natsfleet::base {
namespace {

// Reference values of the FNV test suite (http://www.isthe.com/chongo/tech/comp/fnv/).
TEST(FnvHash, MatchesTheReferenceVectors) {
  EXPECT_EQ(fnv1a_32(""), 0x811c9dc5u);
  EXPECT_EQ(fnv1a_32("a"), 0xe40c292cu);
  EXPECT_EQ(fnv1a_32("foobar"), 0xbf9cf968u);
  EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a_64("foobar"), 0x85944171f73967e8ULL);
}

TEST(FnvHash, ReadsBytesAboveAsciiAsUnsigned) {
  static_assert(fnv1a_32("\xff") == ((2166136261u ^ 0xffu) * 16777619u));
  EXPECT_NE(fnv1a_64(std::string("a\0b", 3)), fnv1a_64("ab"));
}

}  // namespace
}  // namespace natsfleet::base
