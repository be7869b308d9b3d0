#include "natsfleet/validate.h"

#include <gtest/gtest.h>

namespace natsfleet {
namespace {

TEST(Validate, Subjects) {
  EXPECT_EQ(check_subject("mail.outgoing"), "");
  EXPECT_EQ(check_subject("member.*.status"), "");
  EXPECT_EQ(check_subject("logs.>"), "");
  EXPECT_NE(check_subject(""), "");
  EXPECT_NE(check_subject("mail..outgoing"), "");
  EXPECT_NE(check_subject(".mail"), "");
  EXPECT_NE(check_subject("mail."), "");
  EXPECT_NE(check_subject("mail outgoing"), "");
  EXPECT_NE(check_subject("logs.>.x"), "");
  EXPECT_NE(check_subject("logs.a*"), "");
  EXPECT_NE(check_subject("logs.*", false), "");
}

TEST(Validate, Names) {
  EXPECT_EQ(check_name("mail-relay"), "");
  EXPECT_NE(check_name(""), "");
  EXPECT_NE(check_name("mail.relay"), "");
  EXPECT_NE(check_name("mail relay"), "");
  EXPECT_NE(check_name("mail*"), "");
}

TEST(Validate, WorkSpecCombinations) {
  WorkSpec ok{.name = "w", .subject = "a.b"};
  EXPECT_EQ(validate_work(ok), "");
  WorkSpec starved = ok;
  starved.concurrency = 8;
  starved.max_ack_pending = 4;
  EXPECT_NE(validate_work(starved), "");
  WorkSpec no_deliver = ok;
  no_deliver.max_deliver = 0;
  EXPECT_NE(validate_work(no_deliver), "");
}

}  // namespace
}  // namespace natsfleet
