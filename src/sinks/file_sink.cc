#include "sinks/file_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "sinks/record.h"

namespace natsfleet::sinks {
namespace {

// The system's error `err` while doing `what` to `path`, in words.
Error io_error(const std::string& what, const std::string& path, int err) {
  return Error{std::error_code(err, std::generic_category()),
               what + " " + path + ": " + std::strerror(err)};
}

}  // namespace

FileSink::FileSink(const FileSinkOptions& options) : path_(options.path), fsync_(options.fsync) {
  std::lock_guard lock(mu_);
  if (!open_locked()) healthy_ = false;
}

FileSink::~FileSink() { stop(); }

std::string FileSink::describe() const {
  return "file " + path_ + (fsync_ == FsyncPolicy::batch ? " (fsync batch)" : "");
}

bool FileSink::healthy() const {
  std::lock_guard lock(mu_);
  return healthy_;
}

uint64_t FileSink::sync_count() const {
  std::lock_guard lock(mu_);
  return sync_count_;
}

void FileSink::stop() {
  std::unique_lock lock(mu_);
  stopped_ = true;
  // A sync leader works on fd_ without the lock; the descriptor must outlive its fdatasync.
  synced_.wait(lock, [this] { return !syncing_; });
  fd_.reset();
}

Result<void> FileSink::open_locked() {
  std::error_code ec;
  const auto parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return Error{ec, "create directory " + parent.string() + ": " + ec.message()};
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("open", path_, errno);
  fd_.reset(fd);
  return {};
}

void FileSink::reopen_if_moved_locked() {
  if (!fd_ || syncing_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_moved_check_ < kMovedCheckEvery) return;
  last_moved_check_ = now;
  struct stat open_file {};
  struct stat at_path {};
  const bool same = ::fstat(fd_.get(), &open_file) == 0 && ::stat(path_.c_str(), &at_path) == 0 &&
                    open_file.st_dev == at_path.st_dev && open_file.st_ino == at_path.st_ino;
  if (same) return;
  // Moved away (log rotation) or deleted: new records go to the path, as configured.
  fd_.reset();
}

Result<void> FileSink::write_locked(const std::string& record) {
  // One write(2) per line under mu_ keeps lines whole; a torn line left by an earlier failure
  // is closed off first so this record still parses on its own line.
  const std::string line = torn_ ? "\n" + record : std::string();
  const std::string& bytes = torn_ ? line : record;
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd_.get(), bytes.data() + written, bytes.size() - written);
    if (n > 0) {
      written += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const int err = n < 0 ? errno : EIO;
    if (written > 0) {
      // Cut the fragment off again; if that fails, remember to start the next line afresh.
      const off_t end = ::lseek(fd_.get(), 0, SEEK_CUR);
      if (end < 0 || ::ftruncate(fd_.get(), end - static_cast<off_t>(written)) != 0) torn_ = true;
    }
    return io_error("write", path_, err);
  }
  torn_ = false;
  return {};
}

Result<void> FileSink::sync_locked(std::unique_lock<std::mutex>& lock) {
  // Group commit: whoever finds no sync running leads one for every write made so far (the
  // current round) and wakes the rest; writes arriving meanwhile join the next round.
  const auto round = round_;
  while (!round->done) {
    if (syncing_) {
      synced_.wait(lock);
      continue;
    }
    syncing_ = true;
    auto leading = std::exchange(round_, std::make_shared<SyncRound>());
    const int fd = fd_.get();
    lock.unlock();
    int rc = 0;
    do {
      rc = ::fdatasync(fd);
    } while (rc != 0 && errno == EINTR);
    const int err = errno;
    lock.lock();
    ++sync_count_;
    if (rc != 0) leading->outcome = io_error("fdatasync", path_, err);
    leading->done = true;
    syncing_ = false;
    synced_.notify_all();
  }
  return round->outcome;
}

SinkResult FileSink::deliver(const Message& message, const std::string& subscription) {
  try {
    std::string line = record_json(message, subscription);
    line += '\n';
    std::unique_lock lock(mu_);
    auto failed = [&](const Error& error) {
      healthy_ = false;
      return SinkResult{Disposition::retry(), {}, error.describe()};
    };
    if (stopped_) return SinkResult{Disposition::retry(), {}, "file sink stopped"};
    reopen_if_moved_locked();
    if (!fd_)
      if (auto opened = open_locked(); !opened) return failed(opened.error());
    if (auto written = write_locked(line); !written) {
      // Opened again on the next try: the file may have been moved, replaced or remounted.
      if (!syncing_) {
        fd_.reset();
      }
      return failed(written.error());
    }
    if (fsync_ == FsyncPolicy::batch)
      if (auto synced = sync_locked(lock); !synced) return failed(synced.error());
    healthy_ = true;
    return {};
  } catch (const std::exception& e) {
    return SinkResult{Disposition::retry(), {}, std::string("file sink: ") + e.what()};
  }
}

}  // namespace natsfleet::sinks
