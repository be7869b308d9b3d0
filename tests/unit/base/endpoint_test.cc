#include "base/endpoint.h"

#include <gtest/gtest.h>

namespace natsfleet::base {
namespace {

TEST(Endpoint, ReadsHostPortForms) {
  auto a = parse_endpoint("127.0.0.1:9464");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9464);
  a = parse_endpoint("[::1]:0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 0);
  a = parse_endpoint("localhost:65535");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "localhost");
  EXPECT_EQ(a->port, 65535);
  a = parse_endpoint(":9464");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "") << "the caller picks the default host";
}

TEST(Endpoint, RefusesMalformedTextQuotingIt) {
  for (const char* text : {"", "9464", "host:", "host:http", "host:65536", "host:-1", "host:12x",
                           "::1:80", "[::1:80", "[]:80"}) {
    const auto a = parse_endpoint(text);
    EXPECT_FALSE(a.ok()) << text;
    if (!a.ok()) {
      EXPECT_EQ(a.error().code, make_error_code(Errc::invalid_argument));
      EXPECT_NE(a.error().describe().find(std::string("\"") + text + "\""), std::string::npos)
          << a.error().describe();
    }
  }
}

TEST(Endpoint, FormatsWhatItReadsBack) {
  EXPECT_EQ(format_endpoint({"127.0.0.1", 80}), "127.0.0.1:80");
  EXPECT_EQ(format_endpoint({"::1", 9464}), "[::1]:9464");
  for (const char* text : {"example.com:1", "[fe80::1]:65535"})
    EXPECT_EQ(format_endpoint(parse_endpoint(text).value()), text);
}

TEST(Url, SplitsSchemeUserHostPortAndRest) {
  auto url = parse_url("HTTPS://user:pw@hooks.example.com:8443/a/b?c=d");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->scheme, "https");
  EXPECT_EQ(url->userinfo, "user:pw");
  EXPECT_EQ(url->host, "hooks.example.com");
  EXPECT_EQ(url->port, 8443);
  EXPECT_EQ(url->rest, "/a/b?c=d");

  auto v6 = parse_url("nats://[::1]:4222");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 4222);

  auto bare = parse_url("nats://broker");
  ASSERT_TRUE(bare.ok());
  EXPECT_FALSE(bare->port.has_value());
  EXPECT_EQ(bare->rest, "");
}

TEST(Url, RefusesWhatIsNotSchemeHostPort) {
  for (const char* bad :
       {"", "broker:4222", "://broker", "nats://", "nats://:4222", "http:///x", "nats://a b:4222",
        "nats://broker:", "nats://broker:65536", "nats://broker:42x", "nats://::1:4222",
        "nats://[::1", "nats://[::1]x", "nats://[]:4222", "http://host\n/x"})
    EXPECT_FALSE(parse_url(bad).ok()) << '"' << bad << '"';
}

TEST(Url, SaysWhatIsWrongWithoutRepeatingTheUrl) {
  const auto no_port = parse_url("nats://user:secret@broker:x");
  ASSERT_FALSE(no_port.ok());
  EXPECT_EQ(no_port.error().describe(), "has a bad port");
  EXPECT_EQ(parse_url("http://[::1/").error().describe(), "has an unclosed IPv6 address");
  EXPECT_EQ(parse_url("http://:80/").error().describe(), "has no host");
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
}  // namespace natsfleet::base
