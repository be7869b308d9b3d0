// Each lint rule fires on the config that has its problem, at the offending table's line, and a
// config without problems yields nothing.
#include "config/lint.h"

#include <gtest/gtest.h>

#include <string>

namespace natsfleet::config {
namespace {

using std::chrono::milliseconds;

constexpr const char* kClean = R"(name = "svc"
servers = ["nats://10.0.0.1:4222"]
[[work]]
name = "w"
dead_letter = "dead.w"
subject = "a.b"
sink = { type = "file", path = "out.jsonl" }
[[work]]
name = "h"
dead_letter = "dead.h"
subject = "a.c"
ack_wait = "30s"
sink = { type = "http", url = "https://hooks.example.com/x", timeout = "10s" }
[[work]]
name = "local"
dead_letter = "dead.local"
subject = "a.d"
sink = { type = "http", url = "http://127.0.0.1:8080/hook" }
[[work]]
name = "worker"
dead_letter = "dead.worker"
subject = "a.e"
ack_wait = "1m"
sink = { type = "worker", command = ["/bin/sh"], timeout = "1m" }
[[broadcast]]
name = "b"
subject = "a.b"
sink = { type = "stdout" }
)";

// Every work left at the default max_deliver without a dead_letter has no-dead-letter; the tests
// of the other rules leave it out so that each shows its own rule alone.
std::vector<LintFinding> without_no_dead_letter(std::vector<LintFinding> findings) {
  std::erase_if(findings, [](const LintFinding& f) { return f.rule == "no-dead-letter"; });
  return findings;
}
std::vector<LintFinding> lint_others(const DaemonConfig& config) {
  return without_no_dead_letter(lint(config));
}
std::vector<LintFinding> lint_all_others(const std::vector<DaemonConfig>& configs) {
  return without_no_dead_letter(lint_all(configs));
}

// The rules a set of findings names, in order.
std::vector<std::string> rules(const std::vector<LintFinding>& findings) {
  std::vector<std::string> out;
  for (const auto& finding : findings) out.push_back(finding.rule);
  return out;
}

TEST(Lint, CleanConfigHasNoFindings) {
  const auto findings = lint(parse_config(kClean, "clean.toml").value());
  EXPECT_TRUE(findings.empty()) << to_string(findings.front());
}

TEST(Lint, CleanConfigsTogetherHaveNoFindings) {
  // The same file twice is two replicas of one service: same work names, so no duplicates.
  const auto config = parse_config(kClean, "clean.toml").value();
  EXPECT_TRUE(lint_all({config, config}).empty());
}

TEST(Lint, FindingPrintsAsFileLineRuleMessage) {
  EXPECT_EQ(to_string({"svc.toml", 7, "embedded-broker", "no servers"}),
            "svc.toml:7: embedded-broker: no servers");
}

TEST(Lint, EmbeddedBrokerWhenNoServers) {
  const auto findings = lint_others(parse_config(R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "file", path = "out.jsonl" }
)",
                                                 "svc.toml")
                                        .value());
  ASSERT_EQ(rules(findings), std::vector<std::string>{"embedded-broker"});
  EXPECT_EQ(findings[0].file, "svc.toml");
  EXPECT_EQ(findings[0].line, 1);
}

TEST(Lint, DuplicateSubjectInOneFile) {
  const auto findings = lint_others(parse_config(R"(name = "svc"
servers = ["nats://10.0.0.1:4222"]
[[work]]
name = "relay"
subject = "mail.outgoing"
sink = { type = "file", path = "a.jsonl" }
[[work]]
name = "relay-2"
subject = "mail.outgoing"
sink = { type = "file", path = "b.jsonl" }
)",
                                                 "svc.toml")
                                        .value());
  ASSERT_EQ(rules(findings), std::vector<std::string>{"duplicate-subject"});
  EXPECT_EQ(findings[0].line, 7);
  EXPECT_NE(findings[0].message.find("'relay' (line 3)"), std::string::npos) << findings[0].message;
}

TEST(Lint, DuplicateSubjectAcrossFilesOnlyForDifferentWorkNames) {
  constexpr const char* kRelay = R"(name = "svc"
servers = ["nats://10.0.0.1:4222"]
[[work]]
name = "%s"
subject = "mail.outgoing"
sink = { type = "file", path = "a.jsonl" }
)";
  auto with_name = [&](const std::string& name, const std::string& file) {
    std::string text = kRelay;
    text.replace(text.find("%s"), 2, name);
    return parse_config(text, file).value();
  };
  // Same name: one shared consumer, which is the point.
  EXPECT_TRUE(
      lint_all_others({with_name("relay", "a.toml"), with_name("relay", "b.toml")}).empty());

  const auto findings =
      lint_all_others({with_name("relay", "a.toml"), with_name("relay-b", "b.toml")});
  ASSERT_EQ(rules(findings), std::vector<std::string>{"duplicate-subject"});
  EXPECT_EQ(findings[0].file, "b.toml");
  EXPECT_EQ(findings[0].line, 3);
  EXPECT_NE(findings[0].message.find("a.toml:3"), std::string::npos) << findings[0].message;
  // lint alone looks at one file, where nothing is duplicated.
  EXPECT_TRUE(lint_others(with_name("relay-b", "b.toml")).empty());
}

TEST(Lint, BroadcastShadowsWorkAcrossFiles) {
  const auto work = parse_config(R"(name = "indexer"
servers = ["nats://10.0.0.1:4222"]
[[work]]
name = "status"
subject = "index.jobs"
sink = { type = "file", path = "a.jsonl" }
)",
                                 "indexer.toml")
                        .value();
  const auto broadcast = parse_config(R"(name = "gateway"
servers = ["nats://10.0.0.1:4222"]

[[broadcast]]
name = "status"
subject = "member.*.status"
sink = { type = "stdout" }
)",
                                      "gateway.toml")
                             .value();
  EXPECT_TRUE(lint_others(broadcast).empty());
  const auto findings = lint_all_others({work, broadcast});
  ASSERT_EQ(rules(findings), std::vector<std::string>{"broadcast-shadows-work"});
  EXPECT_EQ(findings[0].file, "gateway.toml");
  EXPECT_EQ(findings[0].line, 4);
  EXPECT_NE(findings[0].message.find("indexer.toml:3"), std::string::npos) << findings[0].message;
}

TEST(Lint, BroadcastShadowsWorkInOneConfigBuiltInCode) {
  // parse_config refuses this; a config assembled in code is still linted for it.
  DaemonConfig config;
  config.file = "built";
  config.fleet.servers = {"nats://10.0.0.1:4222"};
  config.work.push_back({.spec = {.name = "status", .subject = "a.b"},
                         .sink = sinks::FileSinkOptions{.path = "x"},
                         .line = 3});
  config.broadcast.push_back({.spec = {.name = "status", .subject = "c.d"},
                              .sink = sinks::StdoutSinkOptions{},
                              .line = 8});
  const auto findings = lint_others(config);
  ASSERT_EQ(rules(findings), std::vector<std::string>{"broadcast-shadows-work"});
  EXPECT_EQ(findings[0].line, 8);
}

TEST(Lint, AWorkerWhoseProgramDoesNotRun) {
  const auto findings = lint_others(parse_config(R"(name = "svc"
servers = ["nats://10.0.0.1:4222"]
[[work]]
name = "missing"
subject = "a.b"
sink = { type = "worker", command = ["/nonexistent/natsfleet-worker"] }
[[work]]
name = "not-in-path"
subject = "a.c"
sink = { type = "worker", command = ["natsfleet-no-such-program"] }
[[work]]
name = "found-in-path"
subject = "a.d"
sink = { type = "worker", command = ["sh", "-c", "cat"] }
[[work]]
name = "a-directory"
subject = "a.e"
sink = { type = "worker", command = ["/tmp"] }
)",
                                                 "svc.toml")
                                        .value());
  ASSERT_EQ(rules(findings),
            (std::vector<std::string>{"worker-not-found", "worker-not-found", "worker-not-found"}));
  EXPECT_EQ(findings[0].line, 6);
  EXPECT_NE(findings[0].message.find("'/nonexistent/natsfleet-worker' is not an executable file"),
            std::string::npos)
      << findings[0].message;
  EXPECT_EQ(findings[1].line, 10);
  EXPECT_NE(findings[1].message.find("in PATH"), std::string::npos) << findings[1].message;
  EXPECT_EQ(findings[2].line, 18);
}

TEST(Lint, AckWaitBelowSinkTimeout) {
  const auto findings = lint_others(parse_config(R"(name = "svc"
servers = ["nats://10.0.0.1:4222"]
[[work]]
name = "hook"
subject = "a.b"
ack_wait = "5s"
sink = { type = "http", url = "https://hooks.example.com/x" }
[[work]]
name = "worker"
subject = "a.c"
sink = { type = "worker", command = ["/bin/sh"], timeout = "1m" }
)",
                                                 "svc.toml")
                                        .value());
  ASSERT_EQ(rules(findings), (std::vector<std::string>{"ack-wait-below-sink-timeout",
                                                       "ack-wait-below-sink-timeout"}));
  EXPECT_EQ(findings[0].line, 3);
  EXPECT_NE(findings[0].message.find("ack_wait 5s below its http sink's timeout 10s"),
            std::string::npos)
      << findings[0].message;
  EXPECT_EQ(findings[1].line, 8);
}

TEST(Lint, AckPendingBelowConcurrencyInAConfigBuiltInCode) {
  // parse_config refuses this combination (validate_work does), so only code can build it.
  DaemonConfig config;
  config.file = "built";
  config.fleet.servers = {"nats://10.0.0.1:4222"};
  WorkConfig work{.spec = {.name = "w", .subject = "a.b"},
                  .sink = sinks::FileSinkOptions{.path = "x"}};
  work.spec.flow.concurrency = 8;
  work.spec.flow.max_ack_pending = 4;
  work.line = 5;
  config.work.push_back(work);
  const auto findings = lint_others(config);
  ASSERT_EQ(rules(findings), std::vector<std::string>{"ack-pending-below-concurrency"});
  EXPECT_EQ(findings[0].line, 5);
}

TEST(Lint, PlainHttpToARemoteHost) {
  const auto findings = lint_others(parse_config(R"(name = "svc"
servers = ["nats://10.0.0.1:4222"]
[[work]]
name = "remote"
subject = "a.b"
sink = { type = "http", url = "http://hooks.example.com/x" }
[[work]]
name = "loopback"
subject = "a.c"
sink = { type = "http", url = "http://localhost:8080/x" }
[[work]]
name = "loopback-v6"
subject = "a.d"
sink = { type = "http", url = "http://[::1]:8080/x" }
[[broadcast]]
name = "b"
subject = "a.e"
sink = { type = "http", url = "HTTP://10.1.2.3/x" }
)",
                                                 "svc.toml")
                                        .value());
  ASSERT_EQ(rules(findings), (std::vector<std::string>{"plain-http-remote", "plain-http-remote"}));
  EXPECT_EQ(findings[0].line, 6);
  EXPECT_EQ(findings[1].line, 18);
}

TEST(Lint, WebSocketSinkWithoutAuthenticationOrForAnyOrigin) {
  const auto findings = lint_others(parse_config(R"(name = "svc"
servers = ["nats://10.0.0.1:4222"]
[[broadcast]]
name = "open"
subject = "member.*.status"
sink = { type = "websocket", listen = "0.0.0.0:8090" }
[[broadcast]]
name = "proxied"
subject = "member.*.other"
sink = { type = "websocket", listen = "127.0.0.1:8091", member_header = "X-Auth-Member", allowed_origins = ["*"] }
)",
                                                 "svc.toml")
                                        .value());
  ASSERT_EQ(rules(findings),
            (std::vector<std::string>{"websocket-no-auth", "websocket-any-origin"}));
  EXPECT_EQ(findings[0].line, 6);
  EXPECT_NE(findings[0].message.find("0.0.0.0:8090"), std::string::npos) << findings[0].message;
  EXPECT_NE(findings[0].message.find("any member's statuses"), std::string::npos);
  EXPECT_EQ(findings[1].line, 10);
}

TEST(Lint, UnlimitedRedelivery) {
  const auto findings = lint_others(parse_config(R"(name = "svc"
servers = ["nats://10.0.0.1:4222"]
[[work]]
name = "w"
subject = "a.b"
max_deliver = -1
sink = { type = "file", path = "out.jsonl" }
)",
                                                 "svc.toml")
                                        .value());
  ASSERT_EQ(rules(findings), std::vector<std::string>{"unlimited-redelivery"});
  EXPECT_EQ(findings[0].line, 3);
}

TEST(Lint, StdoutSinkForWorkButNotForBroadcast) {
  const auto findings = lint_others(parse_config(R"(name = "svc"
servers = ["nats://10.0.0.1:4222"]
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
[[broadcast]]
name = "b"
subject = "a.c"
sink = { type = "stdout" }
)",
                                                 "svc.toml")
                                        .value());
  ASSERT_EQ(rules(findings), std::vector<std::string>{"stdout-sink-for-work"});
  EXPECT_EQ(findings[0].line, 6);
}

TEST(Lint, FindingsAreOrderedByLineAndGroupedByFile) {
  const auto a = parse_config(R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
max_deliver = -1
sink = { type = "stdout" }
)",
                              "a.toml")
                     .value();
  const auto b = parse_config(R"(name = "svc"
servers = ["nats://10.0.0.1:4222"]
[[work]]
name = "v"
subject = "a.b"
sink = { type = "file", path = "x" }
)",
                              "b.toml")
                     .value();
  std::vector<std::string> printed;
  for (const auto& finding : lint_all_others({a, b})) printed.push_back(to_string(finding));
  ASSERT_EQ(printed.size(), 4u);
  EXPECT_EQ(printed[0].rfind("a.toml:1: embedded-broker: ", 0), 0u) << printed[0];
  EXPECT_EQ(printed[1].rfind("a.toml:2: unlimited-redelivery: ", 0), 0u) << printed[1];
  EXPECT_EQ(printed[2].rfind("a.toml:6: stdout-sink-for-work: ", 0), 0u) << printed[2];
  EXPECT_EQ(printed[3].rfind("b.toml:3: duplicate-subject: ", 0), 0u) << printed[3];
}

TEST(Lint, NoDeadLetterForALimitedWorkWithoutOne) {
  const auto findings = lint(parse_config(R"(name = "svc"
servers = ["nats://10.0.0.1:4222"]
[[work]]
name = "kept"
subject = "a.b"
dead_letter = "dead.a.b"
sink = { type = "file", path = "out.jsonl" }
[[work]]
name = "lost"
subject = "a.c"
max_deliver = 3
sink = { type = "file", path = "out.jsonl" }
[[work]]
name = "loops"
subject = "a.d"
max_deliver = -1
sink = { type = "file", path = "out.jsonl" }
)",
                                          "svc.toml")
                                 .value());
  ASSERT_EQ(rules(findings), (std::vector<std::string>{"no-dead-letter", "unlimited-redelivery"}));
  EXPECT_EQ(findings[0].line, 8);
  EXPECT_NE(findings[0].message.find("work 'lost'"), std::string::npos) << findings[0].message;
  EXPECT_NE(findings[0].message.find("after 3 deliveries"), std::string::npos)
      << findings[0].message;
  EXPECT_EQ(findings[1].line, 13) << "-1 never terminates: unlimited-redelivery, not this rule";
}

}  // namespace
}  // namespace natsfleet::config
