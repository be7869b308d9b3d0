#include "base/file_descriptor.h"

#include <unistd.h>

namespace natsfleet::base {

void FileDescriptor::reset(int fd) noexcept {
  // close() is not retried on EINTR: on Linux the descriptor is gone either way, and a retry
  // could close a descriptor another thread has just been given.
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd < 0 ? -1 : fd;
}

}  // namespace natsfleet::base
