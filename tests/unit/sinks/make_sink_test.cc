#include <gtest/gtest.h>

#include <string>

#include "sink_test_util.h"
#include "sinks/sink.h"
#include "sinks/websocket_sink.h"

namespace natsfleet::sinks {
namespace {

using namespace std::chrono_literals;

// The error's text, or a failure when make_sink built the sink.
std::string error_of(const SinkConfig& config) {
  auto made = make_sink(config);
  if (made) {
    ADD_FAILURE() << "built " << made.value()->describe();
    made.value()->stop();
    return {};
  }
  EXPECT_EQ(made.error().code, Errc::invalid_argument) << made.error().describe();
  return made.error().describe();
}

TEST(MakeSink, BuildsEachTypeAndDescribesIt) {
  testing::TempDir dir;
  const auto path = (dir.path() / "mail.jsonl").string();
  EXPECT_EQ(make_sink(FileSinkOptions{.path = path}).value()->describe(), "file " + path);
  EXPECT_EQ(
      make_sink(FileSinkOptions{.path = path, .fsync = FsyncPolicy::batch}).value()->describe(),
      "file " + path + " (fsync batch)");
  EXPECT_EQ(make_sink(StdoutSinkOptions{}).value()->describe(), "stdout");
  EXPECT_EQ(make_sink(HttpSinkOptions{.url = "http://127.0.0.1:1/hook"}).value()->describe(),
            "http http://127.0.0.1:1/hook");
  auto worker = make_sink(WorkerSinkOptions{.command = {"cat"}});
  ASSERT_TRUE(worker) << worker.error().describe();
  EXPECT_EQ(worker.value()->describe(), "worker cat");
  worker.value()->stop();
}

TEST(MakeSink, BuildsAWebSocketGatewayListeningWhereItSays) {
  auto made = make_sink(WebSocketSinkOptions{.port = 0, .key_token = 2, .max_sessions = 5});
  ASSERT_TRUE(made) << made.error().describe();
  auto* gateway = dynamic_cast<WebSocketSink*>(made.value().get());
  ASSERT_NE(gateway, nullptr) << made.value()->describe();
  EXPECT_GT(gateway->port(), 0);
  EXPECT_EQ(gateway->max_sessions(), 5u);
  EXPECT_EQ(made.value()->describe(),
            "websocket ws://127.0.0.1:" + std::to_string(gateway->port()) +
                "/ws?member=<subject token 2>");
  made.value()->stop();
}

TEST(MakeSink, EachErrorNamesTheSink) {
  EXPECT_EQ(error_of(WorkerSinkOptions{}).rfind("worker sink: ", 0), 0u);
  EXPECT_EQ(error_of(WorkerSinkOptions{.command = {"no-such-program-natsfleet"}}),
            "worker sink: no-such-program-natsfleet is not an executable program (no shell is "
            "used)");
  EXPECT_EQ(error_of(WorkerSinkOptions{.command = {"/nonexistent/bin/worker"}})
                .rfind("worker sink: /nonexistent/bin/worker", 0),
            0u);
  EXPECT_EQ(error_of(HttpSinkOptions{}).rfind("http sink: ", 0), 0u);
  EXPECT_EQ(error_of(HttpSinkOptions{.url = "ftp://example.com/"}).rfind("http sink: ", 0), 0u);
  EXPECT_EQ(error_of(HttpSinkOptions{.url = "http://user:pw@example.com/"}).rfind("http sink: ", 0),
            0u);
  EXPECT_EQ(error_of(WebSocketSinkOptions{.port = 0}).rfind("websocket sink: key_token 0", 0), 0u)
      << "a key_token left unset would send every status to nobody";
  EXPECT_EQ(
      error_of(WebSocketSinkOptions{
                   .port = 0, .key_token = 1, .token_secret_file = "/nonexistent/token.secret"})
          .rfind("websocket sink: cannot read token secret file /nonexistent/token.secret", 0),
      0u);
}

TEST(MakeSink, AWebSocketAddressInUseIsAnErrorNamingTheSinkAndThePort) {
  auto first = make_sink(WebSocketSinkOptions{.port = 0, .key_token = 1});
  ASSERT_TRUE(first) << first.error().describe();
  const int port = dynamic_cast<WebSocketSink&>(*first.value()).port();
  const std::string error =
      error_of(WebSocketSinkOptions{.port = static_cast<std::uint16_t>(port), .key_token = 1});
  EXPECT_EQ(error.rfind("websocket sink: ", 0), 0u) << error;
  EXPECT_NE(error.find(std::to_string(port)), std::string::npos) << error;
  first.value()->stop();
}

TEST(MakeSink, EveryConfigNameOfASinkTypeHasOptionsWithItsDefaults) {
  EXPECT_EQ(kSinkTypes,
            (std::array<std::string_view, 5>{"file", "stdout", "worker", "http", "websocket"}));
  for (std::string_view type : kSinkTypes) {
    auto options = default_sink_options(type);
    ASSERT_TRUE(options) << type;
    EXPECT_EQ(sink_type(*options), type);
  }
  EXPECT_EQ(default_sink_options("kafka"), std::nullopt);
  EXPECT_EQ(default_sink_options("websocket"), SinkConfig(WebSocketSinkOptions{}));
}

}  // namespace
}  // namespace natsfleet::sinks
