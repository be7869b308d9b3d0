// Appends one sink record a line to a file. A message is acked once its line reached the OS
// (write(2) returned fully), or, with fsync "batch", once an fdatasync covering it returned:
// concurrent deliveries share one fdatasync (group commit). A file moved away (log rotation) or
// deleted is noticed within a second, and the path is opened again.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/file_descriptor.h"
#include "sinks/sink.h"

namespace natsfleet::sinks {

class FileSink : public Sink {
 public:
  // Creates the parent directories and opens the file (O_APPEND|O_CREAT). A file that cannot be
  // opened is not an error here: deliver() retries the open and answers retry while it fails, so a
  // disk that comes back does not need a restart.
  explicit FileSink(const FileSinkOptions& options);
  ~FileSink() override;
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  SinkResult deliver(const Message& message, const std::string& subscription) override;
  // False after the last open, write or sync failed, until one succeeds.
  bool healthy() const override;
  std::string describe() const override;
  void stop() override;

  // fdatasync calls made so far (tests check that concurrent deliveries share them).
  uint64_t sync_count() const;

 private:
  // One fdatasync and the deliveries whose writes it covers.
  struct SyncRound {
    bool done = false;
    Result<void> outcome;
  };

  // Errors below: the system's error code, with the operation and the path in words.
  Result<void> open_locked();
  // At most once per kMovedCheckEvery: when the path no longer names the open file (rotated
  // away, deleted, replaced), closes it so the next write opens the path again.
  void reopen_if_moved_locked();
  Result<void> write_locked(const std::string& line);
  Result<void> sync_locked(std::unique_lock<std::mutex>& lock);

  const std::string path_;
  const FsyncPolicy fsync_;
  mutable std::mutex mu_;
  std::condition_variable synced_;
  base::FileDescriptor fd_;
  bool stopped_ = false;
  bool healthy_ = true;
  // A failed write may leave part of a line behind; the next record starts on a new line.
  bool torn_ = false;
  bool syncing_ = false;
  std::shared_ptr<SyncRound> round_ = std::make_shared<SyncRound>();
  uint64_t sync_count_ = 0;
  static constexpr std::chrono::seconds kMovedCheckEvery{1};
  std::chrono::steady_clock::time_point last_moved_check_{};
};

}  // namespace natsfleet::sinks
