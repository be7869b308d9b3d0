#include <gtest/gtest.h>

#include <stdexcept>

#include "sink_test_util.h"
#include "sinks/sink.h"

namespace natsfleet::sinks {
namespace {

using namespace std::chrono_literals;

TEST(MakeSink, BuildsEachTypeAndDescribesIt) {
  testing::TempDir dir;
  const auto path = (dir.path() / "mail.jsonl").string();
  EXPECT_EQ(make_sink({.type = "file", .path = path})->describe(), "file " + path);
  EXPECT_EQ(make_sink({.type = "file", .path = path, .fsync = "batch"})->describe(),
            "file " + path + " (fsync batch)");
  EXPECT_EQ(make_sink({.type = "stdout"})->describe(), "stdout");
  EXPECT_EQ(make_sink({.type = "http", .url = "http://127.0.0.1:1/hook"})->describe(),
            "http http://127.0.0.1:1/hook");
  auto worker = make_sink({.type = "worker", .command = {"cat"}});
  EXPECT_EQ(worker->describe(), "worker cat");
  worker->stop();
}

TEST(MakeSink, RejectsBadOptions) {
  EXPECT_THROW(make_sink({.type = "kafka"}), std::invalid_argument);
  EXPECT_THROW(make_sink({.type = "file"}), std::invalid_argument);
  EXPECT_THROW(make_sink({.type = "file", .path = "x", .fsync = "always"}), std::invalid_argument);
  EXPECT_THROW(make_sink({.type = "worker"}), std::invalid_argument);
  EXPECT_THROW(make_sink({.type = "worker", .command = {"no-such-program-natsfleet"}}),
               std::invalid_argument);
  EXPECT_THROW(make_sink({.type = "worker", .command = {"/nonexistent/bin/worker"}}),
               std::invalid_argument);
  EXPECT_THROW(make_sink({.type = "worker", .command = {"cat"}, .timeout = 0ms}),
               std::invalid_argument);
  EXPECT_THROW(make_sink({.type = "http"}), std::invalid_argument);
  EXPECT_THROW(make_sink({.type = "http", .url = "ftp://example.com/"}), std::invalid_argument);
  EXPECT_THROW(make_sink({.type = "http", .url = "http://user:pw@example.com/"}),
               std::invalid_argument);
}

}  // namespace
}  // namespace natsfleet::sinks
