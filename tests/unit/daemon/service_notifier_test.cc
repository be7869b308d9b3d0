#include "daemon/service_notifier.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

#include "support/notify_listener.h"

namespace natsfleet::daemon {
namespace {

using namespace std::chrono_literals;
using testing::NotifyListener;
using testing::ScopedEnv;

TEST(ServiceNotifier, WithoutANotifySocketItIsOffAndSendsNothing) {
  ::unsetenv("NOTIFY_SOCKET");
  const auto notifier = ServiceNotifier::from_environment();
  EXPECT_FALSE(notifier.enabled());
  EXPECT_TRUE(notifier.send("READY=1"));
}

TEST(ServiceNotifier, SendsOneDatagramToThePathInTheEnvironment) {
  NotifyListener manager;
  ScopedEnv socket("NOTIFY_SOCKET", manager.path());
  const auto notifier = ServiceNotifier::from_environment();
  ASSERT_TRUE(notifier.enabled());
  ASSERT_TRUE(notifier.send("READY=1\nSTATUS=ready"));
  EXPECT_EQ(manager.receive(5s), "READY=1\nSTATUS=ready");
}

TEST(ServiceNotifier, ReadsTheWatchdogIntervalMeantForThisProcess) {
  ScopedEnv socket("NOTIFY_SOCKET", "/run/systemd/notify");
  ScopedEnv usec("WATCHDOG_USEC", "30000000");
  {
    ScopedEnv pid("WATCHDOG_PID", std::to_string(::getpid()));
    EXPECT_EQ(ServiceNotifier::from_environment().watchdog(), std::chrono::seconds(30));
  }
  {
    // Inherited from a parent the manager watches: not this process's to ping.
    ScopedEnv pid("WATCHDOG_PID", std::to_string(::getpid() + 1));
    EXPECT_EQ(ServiceNotifier::from_environment().watchdog(), std::nullopt);
  }
  ScopedEnv zero("WATCHDOG_USEC", "0");
  EXPECT_EQ(ServiceNotifier::from_environment().watchdog(), std::nullopt);
}

TEST(ServiceNotifier, AnAbstractSocketIsReached) {
  const std::string name = "natsfleet-test-" + std::to_string(::getpid());
  base::FileDescriptor fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  ASSERT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address),
                   static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())),
            0);
  ASSERT_TRUE(ServiceNotifier("@" + name, std::nullopt).send("WATCHDOG=1"));
  char buf[64];
  const ssize_t n = ::recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
  EXPECT_EQ(std::string(buf, n > 0 ? size_t(n) : 0), "WATCHDOG=1");
}

TEST(ServiceNotifier, AnUnusableSocketIsAnErrorThatNamesIt) {
  auto relative = ServiceNotifier("notify.sock", std::nullopt).send("READY=1");
  ASSERT_FALSE(relative);
  EXPECT_NE(relative.error().describe().find("notify.sock"), std::string::npos);
  NotifyListener manager;  // its directory exists; nothing listens at none.sock in it
  const std::string none = manager.path() + ".none";
  auto absent = ServiceNotifier(none, std::nullopt).send("READY=1");
  ASSERT_FALSE(absent);
  EXPECT_NE(absent.error().describe().find(none + ": send"), std::string::npos)
      << absent.error().describe();
}

}  // namespace
}  // namespace natsfleet::daemon
