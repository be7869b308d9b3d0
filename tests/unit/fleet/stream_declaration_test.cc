// A work's declared stream: what the broker is asked to create, and each way an existing stream
// differs from it, with the broker's own defaults read as "unset".
#include "fleet/stream_declaration.h"

#include <gtest/gtest.h>

#include "nats/jetstream_api.h"
#include "natsfleet/validate.h"

namespace natsfleet::fleet {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using Strings = std::vector<std::string>;

WorkSpec declaring(StreamSpec stream) {
  WorkSpec spec{.name = "mailer", .subject = "mail.send"};
  spec.declared_stream = std::move(stream);
  return spec;
}

// A stream as the broker reports one created with no limits.
nats::StreamConfig broker_defaults(const std::string& name, Strings subjects) {
  return {.name = name,
          .subjects = std::move(subjects),
          .max_age = {},
          .duplicate_window = minutes(2),
          .num_replicas = 1,
          .max_bytes = -1,
          .max_msgs = -1};
}

TEST(DeclaredStream, TheBrokerIsAskedForWhatIsDeclaredWithTheWorksSubjectsByDefault) {
  auto config = declared_stream_config(declaring({.name = "MAIL",
                                                  .storage = StreamStorage::memory,
                                                  .retention = StreamRetention::work_queue,
                                                  .replicas = 3,
                                                  .max_age = hours(1),
                                                  .max_bytes = 1 << 20,
                                                  .max_msgs = 500}));
  EXPECT_EQ(config.name, "MAIL");
  EXPECT_EQ(config.subjects, Strings{"mail.send"});
  EXPECT_EQ(config.storage, nats::StorageType::memory);
  EXPECT_EQ(config.retention, nats::RetentionPolicy::work_queue);
  EXPECT_EQ(config.num_replicas, 3);
  EXPECT_EQ(config.max_age, hours(1));
  EXPECT_EQ(config.max_bytes, 1 << 20);
  EXPECT_EQ(config.max_msgs, 500);
  auto wire = nats::to_json(config);
  EXPECT_EQ(wire["retention"], "workqueue");
  EXPECT_EQ(wire["max_msgs"], 500);

  auto spec = declaring({.name = "MAIL", .subjects = {"mail.>"}});
  EXPECT_EQ(declared_stream_config(spec).subjects, Strings{"mail.>"});
  spec.subject.clear();
  spec.subjects = {"mail.send", "mail.bounce"};
  spec.declared_stream->subjects.clear();
  EXPECT_EQ(declared_stream_config(spec).subjects, (Strings{"mail.send", "mail.bounce"}));
}

TEST(DeclaredStream, UnsetLimitsMatchTheBrokersDefaults) {
  EXPECT_EQ(stream_differences({.name = "MAIL"}, broker_defaults("MAIL", {"mail.>"})), Strings{});
}

TEST(DeclaredStream, EachDifferenceIsNamedWithBothValues) {
  StreamSpec declared{.name = "MAIL",
                      .subjects = {"mail.send"},
                      .storage = StreamStorage::memory,
                      .retention = StreamRetention::interest,
                      .replicas = 3,
                      .max_age = hours(24),
                      .max_bytes = 1000,
                      .max_msgs = 10,
                      .duplicate_window = minutes(1)};
  EXPECT_EQ(
      stream_differences(declared, broker_defaults("MAIL", {"mail.>"})),
      (Strings{"subjects: mail.send declared, mail.> on the broker",
               "storage: memory declared, file on the broker",
               "retention: interest declared, limits on the broker",
               "replicas: 3 declared, 1 on the broker", "max_age: 24h declared, none on the broker",
               "max_bytes: 1000 declared, none on the broker",
               "max_msgs: 10 declared, none on the broker",
               "duplicate_window: 1m declared, 2m on the broker"}));
}

TEST(DeclaredStream, ValidateRefusesWhatTheBrokerWouldAndWhatCannotServeTheWork) {
  auto problem = [](WorkSpec spec) {
    auto checked = validate_work(spec);
    return checked ? std::string() : checked.error().message;
  };
  EXPECT_EQ(problem(declaring({.name = "MAIL"})), "");
  EXPECT_EQ(problem(declaring({.name = "MAIL", .subjects = {"mail.*"}})), "");
  EXPECT_EQ(problem(declaring({.name = "MAIL", .subjects = {"mail.bounce"}})),
            "declared_stream.subjects do not hold the work's subject 'mail.send'");
  EXPECT_NE(problem(declaring({.name = "MA IL"})).find("declared_stream.name"), std::string::npos);
  EXPECT_NE(problem(declaring({.name = "MAIL", .replicas = 6})).find("declared_stream.replicas"),
            std::string::npos);
  EXPECT_EQ(problem(declaring({.name = "MAIL", .max_bytes = 0})),
            "declared_stream.max_bytes must be -1 (no limit) or positive");
  EXPECT_EQ(problem(declaring({.name = "MAIL", .max_msgs = -2})),
            "declared_stream.max_msgs must be -1 (no limit) or positive");
  EXPECT_EQ(
      problem(declaring({.name = "MAIL", .max_age = minutes(1), .duplicate_window = minutes(2)})),
      "declared_stream.duplicate_window is longer than its max_age");

  auto named_otherwise = declaring({.name = "MAIL"});
  named_otherwise.stream = "POST";
  EXPECT_EQ(problem(named_otherwise),
            "stream 'POST' is not the declared stream 'MAIL': leave stream empty or name the same "
            "one");
  auto ordered = declaring({.name = "MAIL"});
  ordered.subject = "mail.*";
  ordered.per_key.emplace();
  ordered.per_key->key_token = 2;
  EXPECT_NE(problem(ordered).find("not available with ordering = per-key"), std::string::npos);
}

}  // namespace
}  // namespace natsfleet::fleet
