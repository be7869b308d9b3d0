#include "base/file_descriptor.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <utility>

namespace natsfleet::base {
namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

int open_null() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

TEST(FileDescriptor, ClosesWhatItOwnsWhenItGoes) {
  int raw = -1;
  {
    FileDescriptor fd(open_null());
    raw = fd.get();
    ASSERT_TRUE(fd);
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(FileDescriptor, AFailedOpenOwnsNothing) {
  FileDescriptor fd(-1);
  EXPECT_FALSE(fd);
  EXPECT_EQ(fd.get(), -1);
  FileDescriptor empty;
  EXPECT_FALSE(empty.valid());
}

TEST(FileDescriptor, MovingHandsOverOwnership) {
  FileDescriptor a(open_null());
  const int raw = a.get();
  FileDescriptor b(std::move(a));
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(b.get(), raw);
  FileDescriptor c;
  c = std::move(b);
  EXPECT_EQ(c.get(), raw);
  EXPECT_TRUE(is_open(raw));
}

TEST(FileDescriptor, AssignmentAndResetCloseTheOldOne) {
  FileDescriptor a(open_null());
  const int first = a.get();
  a = FileDescriptor(open_null());
  EXPECT_FALSE(is_open(first)) << "the new one is opened before the old one is closed";
  const int second = a.get();
  a.reset();
  EXPECT_FALSE(is_open(second));
  EXPECT_FALSE(a);
}

TEST(FileDescriptor, ReleaseLeavesTheDescriptorOpen) {
  int raw = -1;
  {
    FileDescriptor fd(open_null());
    raw = fd.release();
  }
  EXPECT_TRUE(is_open(raw));
  ::close(raw);
}

}  // namespace
}  // namespace natsfleet::base
