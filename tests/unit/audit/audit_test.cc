// What the audit does before it touches a broker: which servers it asks, which options it
// refuses, and how it explains a broker it cannot reach.
#include "audit/audit.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nats/unreachable_reason.h"
#include "support/nats_server.h"

namespace natsfleet::audit {
namespace {

using namespace std::chrono_literals;

TEST(AuditServers, FlagsWinThenTheConfigThenTheLocalDefault) {
  EXPECT_EQ(audit_servers({"nats://a:1"}, {"nats://b:2"}), std::vector<std::string>{"nats://a:1"});
  EXPECT_EQ(audit_servers({}, {"nats://b:2"}), std::vector<std::string>{"nats://b:2"});
  EXPECT_EQ(audit_servers({}, {}), std::vector<std::string>{kDefaultServer});
}

TEST(RunAudit, RefusesAnIntervalThatLeavesNoTimeForTheSecondSample) {
  AuditOptions options;
  options.servers = {"nats://127.0.0.1:1"};
  options.interval = 20s;
  options.timeout = 20s;
  auto report = run_audit(options);
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, Errc::invalid_argument);
  EXPECT_NE(report.error().describe().find("--interval 20s"), std::string::npos);
  options.interval = 0s;
  EXPECT_FALSE(run_audit(options));
}

TEST(UnreachableReason, APortNobodyListensOnIsRefused) {
  const int port = testing::free_loopback_port();
  EXPECT_EQ(nats::unreachable_reason("nats://127.0.0.1:" + std::to_string(port), 1s),
            "Connection refused");
}

TEST(UnreachableReason, ANameThatDoesNotResolve) {
  EXPECT_NE(nats::unreachable_reason("nats://no-such-host.invalid:4222", 1s).find("cannot resolve"),
            std::string::npos);
}

TEST(UnreachableReason, APortThatAcceptsButSpeaksNoNats) {
  // Listening, never accepting: the kernel completes the TCP handshake, nothing more comes.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t length = sizeof address;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string url = "nats://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  EXPECT_NE(nats::unreachable_reason(url, 1s).find("NATS handshake did not complete"),
            std::string::npos);
  ::close(fd);
}

TEST(RunAudit, AnUnreachableBrokerIsNamedWithTheReason) {
  AuditOptions options;
  const std::string url = "nats://127.0.0.1:" + std::to_string(testing::free_loopback_port());
  options.servers = {url};
  options.interval = 100ms;
  options.timeout = 5s;
  const auto start = std::chrono::steady_clock::now();
  auto report = run_audit(options);
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().describe(), "cannot reach " + url + ": Connection refused");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

}  // namespace
}  // namespace natsfleet::audit
