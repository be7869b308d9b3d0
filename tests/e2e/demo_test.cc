// The README's first command: `natsfleet demo` tells the story and loses nothing.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <cstdio>
#include <regex>
#include <string>

namespace {

TEST(Demo, TellsTheWholeStoryAndLosesNothing) {
  const std::string command = std::string(NATSFLEET_CLI_BIN) + " demo --messages 600 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) output.append(buf, n);
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 0) << output;
  for (const char* step :
       {"1. Starting an embedded nats-server", "killed with SIGKILL", "killing the broker",
        "6. Deleting consumer", "recreated it from stream sequence", "disk fills up",
        "the downstream is down", "/readyz answers 503", "the downstream is back",
        "replica-a exited with 0", "9. The account:", "Nothing was lost."})
    EXPECT_NE(output.find(step), std::string::npos) << "missing '" << step << "' in:\n" << output;
  EXPECT_TRUE(std::regex_search(output, std::regex(R"(published\s+690\n)"))) << output;
  EXPECT_TRUE(std::regex_search(output, std::regex(R"(\n\s+lost\s+0\n)"))) << output;
}

}  // namespace
