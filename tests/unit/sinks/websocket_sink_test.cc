#include "sinks/websocket_sink.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace natsfleet::sinks {
namespace {

TEST(WebSocketSink, TheKeyIsTheNamedSubjectToken) {
  EXPECT_EQ(subject_token("member.alice.status", 2), "alice");
  EXPECT_EQ(subject_token("member.alice.status", 1), "member");
  EXPECT_EQ(subject_token("member.alice.status", 3), "status");
  EXPECT_EQ(subject_token("member.alice.status", 4), "");
  EXPECT_EQ(subject_token("alice", 1), "alice");
}

TEST(WebSocketSink, AcksEveryStatusWhetherOrNotASessionIsHere) {
  auto sink = std::make_unique<WebSocketSink>(WebSocketSinkOptions{.port = 0, .key_token = 2});
  auto result = sink->deliver(Message("member.alice.status", "{}", {}), "status");
  EXPECT_EQ(result.disposition.kind(), Disposition::Kind::ack);
  EXPECT_NE(sink->describe().find("subject token 2"), std::string::npos) << sink->describe();
  sink->stop();
}

TEST(WebSocketSink, AnAddressInUseIsAnErrorNamingIt) {
  auto first = std::make_unique<WebSocketSink>(WebSocketSinkOptions{.port = 0});
  const int port = first->port();
  try {
    WebSocketSink second({.port = static_cast<std::uint16_t>(port)});
    FAIL() << "a second sink listened on the same port";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace natsfleet::sinks
