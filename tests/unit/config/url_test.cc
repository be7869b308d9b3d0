#include "config/url.h"

#include <gtest/gtest.h>

namespace natsfleet::config {
namespace {

TEST(Url, SplitsSchemeUserHostPortAndRest) {
  auto url = parse_url("HTTPS://user:pw@hooks.example.com:8443/a/b?c=d");
  ASSERT_TRUE(url.has_value());
  EXPECT_EQ(url->scheme, "https");
  EXPECT_EQ(url->userinfo, "user:pw");
  EXPECT_EQ(url->host, "hooks.example.com");
  EXPECT_EQ(url->port, 8443);
  EXPECT_EQ(url->rest, "/a/b?c=d");

  auto v6 = parse_url("nats://[::1]:4222");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 4222);

  auto bare = parse_url("nats://broker");
  ASSERT_TRUE(bare.has_value());
  EXPECT_FALSE(bare->port.has_value());
  EXPECT_EQ(bare->rest, "");
}

TEST(Url, RefusesWhatIsNotSchemeHostPort) {
  for (const char* bad :
       {"", "broker:4222", "://broker", "nats://", "nats://:4222", "http:///x", "nats://a b:4222",
        "nats://broker:", "nats://broker:65536", "nats://broker:42x", "nats://::1:4222",
        "nats://[::1", "nats://[::1]x", "http://host\n/x"})
    EXPECT_FALSE(parse_url(bad).has_value()) << '"' << bad << '"';
}

TEST(Url, LoopbackHosts) {
  for (const char* host : {"localhost", "LocalHost", "127.0.0.1", "127.1.2.3", "::1",
                           "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"})
    EXPECT_TRUE(is_loopback_host(host)) << host;
  for (const char* host : {"10.0.0.1", "128.0.0.1", "example.com", "localhost.example.com",
                           "::", "::2", "0.0.0.0", "127.0.0", "1270.0.0.1"})
    EXPECT_FALSE(is_loopback_host(host)) << host;
}

}  // namespace
}  // namespace natsfleet::config
