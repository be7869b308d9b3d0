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

TEST(Validate, DeadLetterIsAPlainSubjectTheWorkDoesNotConsume) {
  WorkSpec spec{.name = "w", .subject = "mail.*"};
  spec.dead_letter = "dead.mail";
  EXPECT_EQ(validate_work(spec), "");
  spec.dead_letter = "mail.dead.x";  // more tokens than mail.* matches
  EXPECT_EQ(validate_work(spec), "");
  for (const char* bad : {"dead.*", "dead.>", "dead mail", "dead..mail"}) {
    spec.dead_letter = bad;
    EXPECT_NE(validate_work(spec).find("dead_letter"), std::string::npos) << bad;
  }
  for (const char* fed_back : {"mail.dead", "mail.x"}) {
    spec.dead_letter = fed_back;
    EXPECT_NE(validate_work(spec).find("consumed again"), std::string::npos) << fed_back;
  }
  spec.subject = "mail.>";
  spec.dead_letter = "mail.dead.letters";
  EXPECT_NE(validate_work(spec).find("consumed again"), std::string::npos);
  spec.subject = "mail.outgoing";
  spec.dead_letter = "mail.outgoing";
  EXPECT_NE(validate_work(spec).find("consumed again"), std::string::npos);
}

}  // namespace
}  // namespace natsfleet
