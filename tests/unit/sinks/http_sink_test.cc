#include "sinks/http_sink.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "http_test_server.h"
#include "sink_test_util.h"

namespace natsfleet::sinks {
namespace {

using namespace std::chrono_literals;
using testing::CannedReply;
using testing::core_message;
using testing::elapsed_since;
using testing::js_message;
using testing::ordered_message;
using testing::SeenRequest;
using testing::TestHttpServer;
using Kind = Disposition::Kind;
using Clock = std::chrono::steady_clock;

TestHttpServer::Handler always(int status,
                               std::vector<std::pair<std::string, std::string>> headers = {}) {
  return [status, headers](const SeenRequest&) {
    CannedReply reply;
    reply.status = status;
    reply.headers = headers;
    return reply;
  };
}

HttpSinkOptions options_for(const std::string& url, std::chrono::milliseconds timeout = 5s) {
  HttpSinkOptions o;
  o.url = url;
  o.timeout = timeout;
  return o;
}

TEST(HttpSink, OkAcksAndPostsTheRecordWithNatsHeaders) {
  TestHttpServer server(always(200));
  auto options = options_for(server.url("/hook?team=mail"));
  options.headers = {{"Authorization", "Bearer secret"}, {"X-Env", "test"}};
  HttpSink sink(options);
  auto r = sink.deliver(js_message("hello", 42, 3), "mail-relay");
  EXPECT_EQ(r.disposition.kind(), Kind::ack) << r.error;

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const auto& req = requests[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.target, "/hook?team=mail");
  EXPECT_EQ(req.headers.at("content-type"), "application/json");
  EXPECT_EQ(req.headers.at("nats-subject"), "mail.outgoing");
  EXPECT_EQ(req.headers.at("nats-stream"), "MAIL");
  EXPECT_EQ(req.headers.at("nats-sequence"), "42");
  EXPECT_EQ(req.headers.at("nats-delivered"), "3");
  EXPECT_EQ(req.headers.at("authorization"), "Bearer secret");
  EXPECT_EQ(req.headers.at("x-env"), "test");
  EXPECT_EQ(req.headers.at("host"), "127.0.0.1:" + std::to_string(server.port()));
  auto body = nlohmann::json::parse(req.body);
  EXPECT_EQ(body["subscription"], "mail-relay");
  EXPECT_EQ(body["data"], "hello");
  EXPECT_EQ(body["stream_seq"], 42);
  EXPECT_TRUE(body["partition"].is_null());
  EXPECT_EQ(req.headers.count("natsfleet-partition"), 0u);
  EXPECT_EQ(req.headers.count("natsfleet-epoch"), 0u);
}

TEST(HttpSink, OrderedWorkSendsTheFencingToken) {
  TestHttpServer server(always(200));
  HttpSink sink(options_for(server.url()));
  auto r = sink.deliver(ordered_message("paid", 57, 7, 12), "orders");
  EXPECT_EQ(r.disposition.kind(), Kind::ack) << r.error;
  auto req = server.requests().at(0);
  EXPECT_EQ(req.headers.at("natsfleet-partition"), "7");
  EXPECT_EQ(req.headers.at("natsfleet-epoch"), "12");
  EXPECT_EQ(req.headers.at("nats-sequence"), "57");
  auto body = nlohmann::json::parse(req.body);
  EXPECT_EQ(body["partition"], 7);
  EXPECT_EQ(body["epoch"], 12);
}

TEST(HttpSink, CoreMessagesHaveNoStreamHeaders) {
  TestHttpServer server(always(204));
  HttpSink sink(options_for(server.url()));
  EXPECT_EQ(sink.deliver(core_message("up"), "status").disposition.kind(), Kind::ack);
  auto req = server.requests().at(0);
  EXPECT_EQ(req.headers.count("nats-stream"), 0u);
  EXPECT_EQ(req.headers.count("nats-sequence"), 0u);
  EXPECT_EQ(req.headers.count("natsfleet-partition"), 0u);
  EXPECT_EQ(req.headers.count("natsfleet-epoch"), 0u);
  EXPECT_EQ(req.headers.at("nats-delivered"), "1");
  EXPECT_EQ(req.headers.at("nats-subject"), "member.7.status");
}

// The publisher's W3C trace context goes on to the service, so its trace continues there.
TEST(HttpSink, PassesTheMessagesTraceContextOn) {
  TestHttpServer server(always(200));
  HttpSink sink(options_for(server.url()));
  const std::string parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  Message traced("mail.outgoing", "hi",
                 {{"Traceparent", {parent}}, {"tracestate", {"vendor=abc,other=1"}}});
  ASSERT_EQ(sink.deliver(traced, "mail-relay").disposition.kind(), Kind::ack);
  // Malformed: all-zero trace id, upper-case hex, a line break in tracestate.
  Message zeros("mail.outgoing", "hi",
                {{"traceparent", {"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}},
                 {"tracestate", {"vendor=abc"}}});
  ASSERT_EQ(sink.deliver(zeros, "mail-relay").disposition.kind(), Kind::ack);
  Message upper("mail.outgoing", "hi",
                {{"traceparent", {"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"}}});
  ASSERT_EQ(sink.deliver(upper, "mail-relay").disposition.kind(), Kind::ack);
  Message broken_state("mail.outgoing", "hi",
                       {{"traceparent", {parent}}, {"tracestate", {"a=1\r\nX-Injected: 1"}}});
  ASSERT_EQ(sink.deliver(broken_state, "mail-relay").disposition.kind(), Kind::ack);
  ASSERT_EQ(sink.deliver(core_message("untraced"), "status").disposition.kind(), Kind::ack);

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_EQ(requests[0].headers.at("traceparent"), parent);
  EXPECT_EQ(requests[0].headers.at("tracestate"), "vendor=abc,other=1");
  EXPECT_EQ(requests[1].headers.count("traceparent"), 0u);
  EXPECT_EQ(requests[1].headers.count("tracestate"), 0u);
  EXPECT_EQ(requests[2].headers.count("traceparent"), 0u);
  EXPECT_EQ(requests[3].headers.at("traceparent"), parent);
  EXPECT_EQ(requests[3].headers.count("tracestate"), 0u);
  EXPECT_EQ(requests[3].headers.count("x-injected"), 0u);
  EXPECT_EQ(requests[4].headers.count("traceparent"), 0u);
}

TEST(HttpSink, ServerErrorIsADownstreamFailureNotARejection) {
  TestHttpServer server(always(500));
  HttpSink sink(options_for(server.url()));
  auto first = sink.deliver(js_message("m", 1, 1), "s");
  EXPECT_EQ(first.disposition.kind(), Kind::retry);
  EXPECT_EQ(first.disposition.delay(), 0s) << "no Retry-After: the fleet's backoff decides";
  EXPECT_NE(first.error.find("500"), std::string::npos) << first.error;
  auto third = sink.deliver(js_message("m", 1, 3), "s");
  EXPECT_EQ(third.disposition.kind(), Kind::retry);
}

TEST(HttpSink, TooManyRequestsHonoursRetryAfter) {
  TestHttpServer server(always(429, {{"Retry-After", "7"}}));
  HttpSink sink(options_for(server.url()));
  auto r = sink.deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Kind::retry);
  EXPECT_EQ(r.disposition.delay(), 7s);
}

TEST(HttpSink, ServiceUnavailableRetryAfterIsCapped) {
  TestHttpServer server(always(503, {{"Retry-After", "86400"}}));
  HttpSink sink(options_for(server.url()));
  auto r = sink.deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Kind::retry);
  EXPECT_EQ(r.disposition.delay(), 300s);
}

TEST(HttpSink, ClientErrorsTerminate) {
  for (int status : {400, 404, 410, 422}) {
    TestHttpServer server(always(status));
    HttpSink sink(options_for(server.url()));
    auto r = sink.deliver(js_message("m"), "s");
    EXPECT_EQ(r.disposition.kind(), Kind::term) << status;
    EXPECT_NE(r.error.find(std::to_string(status)), std::string::npos) << r.error;
  }
}

TEST(HttpSink, RedirectsAreNotFollowedAndRejectTheMessage) {
  TestHttpServer server(always(301, {{"Location", "/elsewhere"}}));
  HttpSink sink(options_for(server.url()));
  auto r = sink.deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Kind::nak);
  EXPECT_NE(r.error.find("redirect"), std::string::npos) << r.error;
}

TEST(HttpSink, SilentServerTimesOutAsRetryable) {
  TestHttpServer server([](const SeenRequest&) {
    CannedReply reply;
    reply.hang = true;
    return reply;
  });
  HttpSink sink(options_for(server.url(), 300ms));
  const auto start = Clock::now();
  auto r = sink.deliver(js_message("m"), "s");
  const auto took = elapsed_since(start);
  EXPECT_EQ(r.disposition.kind(), Kind::retry);
  EXPECT_NE(r.error.find("timed out"), std::string::npos) << r.error;
  EXPECT_GE(took, 290ms);
  EXPECT_LT(took, 30s);  // the point is that it does not wait for ever
}

TEST(HttpSink, ConnectionRefusedIsRetryable) {
  // A port that was free a moment ago and has no listener now.
  int port = 0;
  { port = TestHttpServer(always(200)).port(); }
  constexpr auto kTimeout = 60s;
  HttpSink sink(options_for("http://127.0.0.1:" + std::to_string(port) + "/", kTimeout));
  const auto start = Clock::now();
  auto r = sink.deliver(js_message("m", 1, 2), "s");
  EXPECT_EQ(r.disposition.kind(), Kind::retry);
  EXPECT_NE(r.error.find("refused"), std::string::npos) << r.error;
  EXPECT_LT(elapsed_since(start), kTimeout / 2) << "answered at once, not at the timeout";
}

TEST(HttpSink, KeepAliveReusesOneConnection) {
  TestHttpServer server(always(200));
  HttpSink sink(options_for(server.url()));
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(sink.deliver(js_message("m"), "s").disposition.kind(), Kind::ack);
  EXPECT_EQ(server.requests().size(), 5u);
  EXPECT_EQ(server.connections(), 1);
}

TEST(HttpSink, KeptAliveConnectionLostOnReuseIsRetriedOnAFreshOne) {
  // The server drops every second request on a connection without answering, as a server
  // closing an idle connection just as it is reused looks to the client.
  auto per_connection = std::make_shared<std::map<int, int>>();  // the server's threads share it
  auto mu = std::make_shared<std::mutex>();
  TestHttpServer server([per_connection, mu](const SeenRequest& request) {
    std::lock_guard lock(*mu);
    CannedReply reply;
    reply.drop = ++(*per_connection)[request.connection] == 2;
    return reply;
  });
  HttpSink sink(options_for(server.url()));
  EXPECT_EQ(sink.deliver(js_message("m"), "s").disposition.kind(), Kind::ack);
  auto r = sink.deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Kind::ack) << r.error;
  EXPECT_EQ(server.connections(), 2);
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(HttpSink, ConcurrentDeliveriesAllAck) {
  TestHttpServer server(always(200));
  HttpSink sink(options_for(server.url()));
  std::atomic<int> acked{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i)
        if (sink.deliver(js_message("m"), "s").disposition.kind() == Kind::ack) ++acked;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(acked, 200);
  EXPECT_EQ(server.requests().size(), 200u);
  EXPECT_LE(server.connections(), 8 + 1);
}

TEST(HttpSink, DeliverAfterStopIsRetryable) {
  TestHttpServer server(always(200));
  HttpSink sink(options_for(server.url()));
  sink.stop();
  EXPECT_EQ(sink.deliver(js_message("m"), "s").disposition.kind(), Kind::retry);
  EXPECT_TRUE(server.requests().empty());
}

TEST(HttpSink, HttpsVerifiesThePeerAndSendsSni) {
  testing::TempDir dir;
  const auto ca = (dir.path() / "ca.pem").string();
  testing::SelfSignedTls tls(ca);
  TestHttpServer server(always(200), tls.server_context());
  const std::string url = "https://localhost:" + std::to_string(server.port()) + "/hook";

  // Trusted through ca_file: the exchange works and the server saw the name.
  auto trusted = options_for(url);
  trusted.ca_file = ca;
  HttpSink sink(trusted);
  auto r = sink.deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Kind::ack) << r.error;
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].server_name, "localhost");
  // The TLS connection is kept alive too.
  EXPECT_EQ(sink.deliver(js_message("m"), "s").disposition.kind(), Kind::ack);
  EXPECT_EQ(server.connections(), 1);

  // With only the system CAs the self-signed certificate is refused, and nothing is sent.
  HttpSink untrusted(options_for(url));
  auto refused = untrusted.deliver(js_message("m"), "s");
  EXPECT_EQ(refused.disposition.kind(), Kind::retry);
  EXPECT_NE(refused.error.find("certificate verify failed"), std::string::npos) << refused.error;
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST(HttpSink, HttpsRefusesACertificateForAnotherName) {
  testing::TempDir dir;
  const auto ca = (dir.path() / "ca.pem").string();
  testing::SelfSignedTls tls(ca, "DNS:other.example");
  TestHttpServer server(always(200), tls.server_context());
  // Trusted, but issued for another name: refused all the same.
  auto options = options_for("https://localhost:" + std::to_string(server.port()) + "/");
  options.ca_file = ca;
  auto r = HttpSink(options).deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Kind::retry);
  EXPECT_NE(r.error.find("certificate verify failed"), std::string::npos) << r.error;
  EXPECT_TRUE(server.requests().empty());
}

TEST(HttpSink, HttpsToAnIpAddressChecksTheAddressInTheCertificate) {
  testing::TempDir dir;
  const auto ca = (dir.path() / "ca.pem").string();
  testing::SelfSignedTls tls(ca);
  TestHttpServer server(always(200), tls.server_context());
  auto options = options_for("https://127.0.0.1:" + std::to_string(server.port()) + "/");
  options.ca_file = ca;
  auto r = HttpSink(options).deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Kind::ack) << r.error;
  // No SNI for an address (RFC 6066 allows host names only).
  EXPECT_EQ(server.requests().at(0).server_name, "");
}

TEST(HttpRetryDelay, RetryAfterSecondsOrBackoff) {
  EXPECT_EQ(http_retry_delay("7", 1), 7s);
  EXPECT_EQ(http_retry_delay(" 0 ", 5), 0s);
  EXPECT_EQ(http_retry_delay("300", 1), 300s);
  EXPECT_EQ(http_retry_delay("301", 1), 300s);
  EXPECT_EQ(http_retry_delay("99999999999999999999", 1), 300s);
  // An HTTP date or junk falls back to the backoff.
  EXPECT_EQ(http_retry_delay("Wed, 21 Oct 2015 07:28:00 GMT", 1), 1s);
  EXPECT_EQ(http_retry_delay("-5", 2), 2s);
  EXPECT_EQ(http_retry_delay("", 0), 1s);
  EXPECT_EQ(http_retry_delay("", 1), 1s);
  EXPECT_EQ(http_retry_delay("", 2), 2s);
  EXPECT_EQ(http_retry_delay("", 6), 32s);
  EXPECT_EQ(http_retry_delay("", 7), 60s);
  EXPECT_EQ(http_retry_delay("", 1000), 60s);
}

TEST(ParseHttpUrl, AcceptsHttpAndHttpsForms) {
  auto a = parse_http_url("http://example.com");
  ASSERT_TRUE(a) << a.error().describe();
  EXPECT_FALSE(a->tls);
  EXPECT_EQ(a->host, "example.com");
  EXPECT_EQ(a->port, "80");
  EXPECT_EQ(a->target, "/");

  auto b = parse_http_url("HTTPS://api.example.com:8443/v1/hook?x=1");
  ASSERT_TRUE(b) << b.error().describe();
  EXPECT_TRUE(b->tls);
  EXPECT_EQ(b->port, "8443");
  EXPECT_EQ(b->target, "/v1/hook?x=1");

  auto c = parse_http_url("http://[::1]:9000?q");
  ASSERT_TRUE(c) << c.error().describe();
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->port, "9000");
  EXPECT_EQ(c->target, "/?q");
}

TEST(ParseHttpUrl, RejectsWhatItCannotUse) {
  for (const char* url :
       {"", "example.com", "ftp://x/", "http://", "http://:80/", "http://h:0/", "http://h:65536/",
        "http://h:8x/", "http://u:p@h/", "http://h/#frag", "http://[::1/"}) {
    auto parsed = parse_http_url(url);
    ASSERT_FALSE(parsed) << url;
    EXPECT_EQ(parsed.error().code, Errc::invalid_argument) << url;
  }
}

}  // namespace
}  // namespace natsfleet::sinks
