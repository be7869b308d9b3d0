// How a chaos run sees what the replicas handled: the payloads it publishes ("c-<id>"), the run's
// clock, and each replica's sink file read as it grows.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chaos/history.h"

namespace natsfleet::chaos {

// "c-<id>" payloads: the id is what the checker follows through the system; -1 for another.
std::string payload_of(int64_t id);
int64_t id_of(const std::string& payload);

// Milliseconds since the run began (steady clock).
class RunClock {
 public:
  double now_ms() const {
    return std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
  }
  std::chrono::steady_clock::time_point at(std::chrono::milliseconds offset) const {
    return start_ + offset;
  }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_ = Clock::now();
};

// Every record a replica's file sink writes, read as it appears. Each record is placed between
// two reads of its file: the last that did not hold it (absent_ms) and the one that found it
// (at_ms). The checker orders two files' records only where these windows do not overlap.
class SinkObserver {
 public:
  SinkObserver(std::string path, int replica) : path_(std::move(path)), replica_(replica) {}
  ~SinkObserver();
  SinkObserver(const SinkObserver&) = delete;
  SinkObserver& operator=(const SinkObserver&) = delete;

  // Reads what is new; complete lines only. A line that is not a record counts in `unreadable`.
  void poll(const RunClock& clock, std::vector<HandlingRecord>& out, size_t& unreadable);

 private:
  bool open_at(bool path_exists, const struct stat& path_stat);
  void drain(const RunClock& clock, double absent, std::vector<HandlingRecord>& out,
             size_t& unreadable);

  std::string path_;
  int replica_;
  int fd_ = -1;
  ino_t inode_ = 0;
  std::string pending_;
  double last_poll_ms_ = 0;  // the run's clock starts before the first record can be written
};

}  // namespace natsfleet::chaos
