// One owned POSIX file descriptor, closed exactly once by its destructor: on every path, the
// throwing ones included. Move-only, like std::unique_ptr.
//
//   base::FileDescriptor fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
//   if (!fd) return errno;
//   ::connect(fd.get(), ...);
#pragma once

#include <utility>

namespace natsfleet::base {

class FileDescriptor {
 public:
  FileDescriptor() = default;
  // Takes ownership of fd; a negative fd (a failed open) owns nothing.
  explicit FileDescriptor(int fd) noexcept : fd_(fd < 0 ? -1 : fd) {}
  ~FileDescriptor() { reset(); }
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }

  // Closes the descriptor held (if any) and takes fd instead.
  void reset(int fd = -1) noexcept;
  // Gives up ownership without closing: the caller closes the returned descriptor.
  [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

}  // namespace natsfleet::base
