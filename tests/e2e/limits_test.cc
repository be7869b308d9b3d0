// Every number has a bound: out of range, `natsfleet run` and `natsfleet lint` exit 2 naming
// file, line and key; a thread the system refuses at run time is an exit 70 in words, not an
// abort.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>

#include "support/address_limit.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"

namespace natsfleet::testing {
namespace {

std::string work_config(const std::string& line) {
  return "name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\n" + line +
         "\nsink = { type = \"stdout\" }\n";
}

// The two values the issue reported: 200000 handler threads aborted the daemon (exit 134), and
// an ack_wait of 9999999999h was accepted and overflowed in nanoseconds.
TEST(Limits, OutOfRangeNumbersExitTwoNamingFileLineAndKey) {
  TempDir dir;
  struct Case {
    std::string line;
    std::string key;
    std::string range;
  };
  for (const Case& c :
       {Case{"concurrency = 200000", "work[0].concurrency", "between 1 and 1024"},
        Case{"ack_wait = \"9999999999h\"", "work[0].ack_wait", "between 200ms and 24h"}}) {
    const std::string path = dir.path() + "/svc.toml";
    std::ofstream(path) << work_config(c.line);
    const std::string where = path + ":5: " + c.key + ": must be " + c.range;
    auto run = run_cli("run " + path + " --server nats://127.0.0.1:1");
    EXPECT_EQ(run.code, 2) << run.err;
    EXPECT_NE(run.err.find(where), std::string::npos)
        << "expected '" << where << "' in " << run.err;
    auto lint = run_cli("lint " + path);
    EXPECT_EQ(lint.code, 2) << lint.out;
    EXPECT_NE(lint.out.find(where), std::string::npos)
        << "expected '" << where << "' in " << lint.out;
  }
}

// 1024 handler threads are in range; a process allowed 600 MB of address space cannot start them.
TEST(Limits, ThreadsTheSystemRefusesExitSeventyInWords) {
  if (!kAddressLimitWorks) GTEST_SKIP() << "not under the sanitizers";
  NatsServer server;
  TempDir dir;
  const std::string path = dir.path() + "/wide.toml";
  std::ofstream(path) << "name = \"svc\"\n[health]\nlisten = \"127.0.0.1:0\"\n[[work]]\nname = "
                         "\"w\"\nsubject = \"a.b\"\nconcurrency = 1024\nmax_ack_pending = 1024\n"
                         "sink = { type = \"stdout\" }\n";
  const std::string command = "ulimit -v 600000 && exec " + std::string(NATSFLEET_CLI_BIN) +
                              " run " + path + " --server " + server.url() + " 2>&1";
  FILE* pipe = ::popen(("sh -c '" + command + "'").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) output.append(buf, n);
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 70) << output;  // 134 when the exception escaped
  EXPECT_NE(output.find("cannot start work w: cannot start handler thread"), std::string::npos)
      << output;
}

}  // namespace
}  // namespace natsfleet::testing
