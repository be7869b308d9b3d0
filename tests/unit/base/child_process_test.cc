#include "base/child_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace natsfleet::base {
namespace {

using namespace std::chrono_literals;

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("natsfleet-child-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

std::string read_file(const std::string& path) {
  std::stringstream s;
  s << std::ifstream(path).rdbuf();
  return s.str();
}

TEST(ChildProcess, RunsArgvWithoutAShellAndReportsItsExit) {
  auto child = ChildProcess::start({"sh", "-c", "exit 3"});
  ASSERT_TRUE(child.ok()) << child.error().describe();
  const int status = child->wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_EQ(describe_wait_status(status), "exited with status 3");
  EXPECT_EQ(child->pid(), -1) << "reaped";
}

TEST(ChildProcess, AMissingProgramIsAnErrorNamingIt) {
  auto child = ChildProcess::start({"/nonexistent/natsfleet-no-such-program"});
  ASSERT_FALSE(child.ok());
  EXPECT_NE(child.error().describe().find("spawn /nonexistent/natsfleet-no-such-program"),
            std::string::npos)
      << child.error().describe();
  EXPECT_FALSE(spawn_child({}).ok());
}

TEST(ChildProcess, RedirectsStdoutAndStderrIntoOneFile) {
  const std::string log = temp_file("log");
  std::filesystem::remove(log);
  auto child = ChildProcess::start(
      {"sh", "-c", "read line; echo out:$line; echo err >&2"},
      {.stdin_path = "/dev/null", .stdout_path = log, .stderr_to_stdout = true});
  ASSERT_TRUE(child.ok());
  child->wait();
  EXPECT_EQ(read_file(log), "out:\nerr\n");
  std::filesystem::remove(log);
}

TEST(ChildProcess, HandsOverDescriptorsAsStandardStreams) {
  int to_child[2];
  int from_child[2];
  ASSERT_EQ(::pipe2(to_child, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(from_child, O_CLOEXEC), 0);
  auto child = ChildProcess::start({"cat"}, {.stdin_fd = to_child[0], .stdout_fd = from_child[1]});
  ASSERT_TRUE(child.ok());
  ::close(to_child[0]);
  ::close(from_child[1]);
  ASSERT_EQ(::write(to_child[1], "ping", 4), 4);
  ::close(to_child[1]);
  char buf[8] = {};
  EXPECT_EQ(::read(from_child[0], buf, sizeof buf), 4);
  EXPECT_EQ(std::string(buf), "ping");
  ::close(from_child[0]);
  EXPECT_EQ(child->wait(), 0);
}

TEST(ChildProcess, ResetsBlockedSignalsAndLeavesOtherDescriptorsBehind) {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigset_t before;
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &term, &before), 0);
  const int inherited = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC: a careless descriptor
  ASSERT_GE(inherited, 0);
  const std::string script =
      "test -e /proc/self/fd/" + std::to_string(inherited) + " && exit 9; exec sleep 30";
  auto child = ChildProcess::start({"sh", "-c", script}, {.close_other_descriptors = true});
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  ::close(inherited);
  ASSERT_TRUE(child.ok());
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(child->running()) << "it saw our descriptor";
  const int status = child->stop(5s);
  ASSERT_TRUE(WIFSIGNALED(status)) << describe_wait_status(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM) << "SIGTERM was blocked in the child";
}

TEST(ChildProcess, WaitForGivesUpOnARunningChildAndTheDestructorKillsIt) {
  pid_t pid = -1;
  {
    auto child = ChildProcess::start({"sleep", "30"});
    ASSERT_TRUE(child.ok());
    pid = child->pid();
    EXPECT_FALSE(child->wait_for(50ms).has_value());
    EXPECT_TRUE(child->running());
    EXPECT_TRUE(child->signal(0));
  }
  EXPECT_NE(::kill(pid, 0), 0) << "killed and reaped";
}

TEST(ChildProcess, RunningStaysTrueUntilItExitsAndLeavesTheZombieToWait) {
  auto child = ChildProcess::start({"sh", "-c", "exit 0"});
  ASSERT_TRUE(child.ok());
  while (child->running()) std::this_thread::sleep_for(5ms);
  EXPECT_GT(child->pid(), 0) << "not reaped by running()";
  EXPECT_EQ(child->peek_exit(), "exited with status 0");
  EXPECT_GT(child->pid(), 0) << "not reaped by peek_exit()";
  EXPECT_EQ(child->try_wait(), 0);
  EXPECT_FALSE(child->peek_exit().has_value());
}

}  // namespace
}  // namespace natsfleet::base
