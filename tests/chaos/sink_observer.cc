#include "chaos/sink_observer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

namespace natsfleet::chaos {

std::string payload_of(int64_t id) { return "c-" + std::to_string(id); }

int64_t id_of(const std::string& payload) {
  if (payload.rfind("c-", 0) != 0) return -1;
  try {
    return std::stoll(payload.substr(2));
  } catch (...) {
    return -1;
  }
}

SinkObserver::~SinkObserver() {
  if (fd_ >= 0) ::close(fd_);
}

void SinkObserver::poll(const RunClock& clock, std::vector<HandlingRecord>& out,
                        size_t& unreadable) {
  // Before the stat: a record this poll misses was written after it.
  const double started = clock.now_ms();
  const double absent = last_poll_ms_;
  last_poll_ms_ = started;
  struct stat path_stat {};
  const bool path_exists = ::stat(path_.c_str(), &path_stat) == 0 && S_ISREG(path_stat.st_mode);
  if (fd_ < 0 && !open_at(path_exists, path_stat)) return;
  drain(clock, absent, out, unreadable);
  // The sink opened a new file at the path: finish the old one (done above), follow the new.
  // The previous poll did not find the new file at the path: its records came after that poll.
  if (path_exists && path_stat.st_ino != inode_) {
    ::close(fd_);
    fd_ = -1;
    pending_.clear();
    if (open_at(path_exists, path_stat)) drain(clock, absent, out, unreadable);
  }
}

bool SinkObserver::open_at(bool path_exists, const struct stat& path_stat) {
  if (!path_exists) return false;
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return false;
  inode_ = path_stat.st_ino;
  return true;
}

void SinkObserver::drain(const RunClock& clock, double absent, std::vector<HandlingRecord>& out,
                         size_t& unreadable) {
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd_, buffer, sizeof buffer);
    if (n <= 0) break;
    pending_.append(buffer, static_cast<size_t>(n));
  }
  const double at = clock.now_ms();
  size_t start = 0;
  for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string_view line(pending_.data() + start, nl - start);
    if (line.empty()) continue;
    auto record = nlohmann::json::parse(line, nullptr, false);
    const int64_t id = record.is_object() ? id_of(record.value("data", "")) : -1;
    if (id < 0) {
      ++unreadable;
      continue;
    }
    HandlingRecord r{
        id, replica_, record.value("delivered", 0), record.value("stream_seq", uint64_t{0}),
        at, absent};
    if (auto p = record.find("partition"); p != record.end() && p->is_number_integer())
      r.partition = p->get<int>();
    if (auto e = record.find("epoch"); e != record.end() && e->is_number_unsigned())
      r.epoch = e->get<uint64_t>();
    out.push_back(std::move(r));
  }
  pending_.erase(0, start);
}

}  // namespace natsfleet::chaos
