#include "nats/server_version.h"

#include <gtest/gtest.h>

namespace natsfleet::nats {
namespace {

TEST(ServerVersion, ReadFromTheInfoLine) {
  const auto v = parse_info_version(
      R"(INFO {"server_id":"NB3","version":"2.10.27","proto":1,"headers":true,"jetstream":true})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->text, "2.10.27");
  EXPECT_EQ(v->major, 2);
  EXPECT_EQ(v->minor, 10);
  EXPECT_EQ(v->patch, 27);
  EXPECT_TRUE(v->at_least(2, 10));
  EXPECT_TRUE(v->at_least(2, 9));
  EXPECT_FALSE(v->at_least(2, 11));
  EXPECT_FALSE(v->at_least(3, 0));

  const auto old = parse_info_version(R"(INFO {"version":"2.9.10"})");
  ASSERT_TRUE(old);
  EXPECT_FALSE(old->at_least(2, 10));
  const auto rc = parse_info_version(R"(INFO {"version":"2.11.0-RC.2"})");
  ASSERT_TRUE(rc);
  EXPECT_TRUE(rc->at_least(2, 11));
  EXPECT_EQ(rc->text, "2.11.0-RC.2");
}

TEST(ServerVersion, AnythingElseIsNoVersion) {
  for (const char* line :
       {"", "PING", "INFO", "INFO {}", "INFO {\"version\":2}", "INFO {\"version\":\"2.x.1\"}",
        "INFO {\"version\":\"2.10\"}", "-ERR 'Authorization Violation'", "INFO not json"})
    EXPECT_FALSE(parse_info_version(line)) << line;
}

TEST(ServerVersion, AddressOfEveryUrlFormTheClientTakes) {
  struct Case {
    const char* url;
    const char* host;
    const char* port;
  };
  for (const Case& c :
       {Case{"nats://127.0.0.1:4222", "127.0.0.1", "4222"},
        Case{"tls://broker.example:7422", "broker.example", "7422"},
        Case{"nats://user:p%40ss@10.0.0.5:5222", "10.0.0.5", "5222"},
        Case{"nats://token@broker", "broker", "4222"}, Case{"broker:4333", "broker", "4333"},
        Case{"nats://[::1]:4222", "::1", "4222"}, Case{"nats://[fe80::1]", "fe80::1", "4222"},
        Case{"nats://broker:4222/", "broker", "4222"}}) {
    const auto a = server_address(c.url);
    ASSERT_TRUE(a) << c.url;
    EXPECT_EQ(a->host, c.host) << c.url;
    EXPECT_EQ(a->port, c.port) << c.url;
  }
  for (const char* bad : {"ws://broker:8080", "wss://broker", "nats://", "nats://:4222",
                          "nats://broker:port", "nats://[::1", "nats://[::1]x"})
    EXPECT_FALSE(server_address(bad)) << bad;
}

TEST(ServerVersion, AnErrorNamesHostAndPortNeverTheUrlsPassword) {
  // Port 9 on loopback: nothing listens (discard is not run here), so the connect is refused.
  const auto v = read_server_version("nats://admin:s3cret@127.0.0.1:9", std::chrono::seconds(2));
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().describe().find("127.0.0.1:9"), std::string::npos) << v.error().describe();
  EXPECT_EQ(v.error().describe().find("s3cret"), std::string::npos) << v.error().describe();
}

}  // namespace
}  // namespace natsfleet::nats
