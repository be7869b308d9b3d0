#include "health/process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace natsfleet::health {
namespace {

// The boot time, seconds since the epoch: /proc/stat's btime.
std::optional<double> boot_time() {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  return std::nullopt;
}

}  // namespace

std::optional<ProcessStats> read_process_stats() {
  std::ifstream in("/proc/self/stat");
  std::string text;
  if (!std::getline(in, text)) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: the fields after it follow the
  // last ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 2));
  std::string skip;
  unsigned long long utime = 0, stime = 0, start = 0, vsize = 0;
  long long rss = 0;
  // Fields 3..13, then utime (14), stime (15), fields 16..21, starttime (22), vsize (23), rss (24).
  for (int i = 3; i <= 13; ++i) fields >> skip;
  fields >> utime >> stime;
  for (int i = 16; i <= 21; ++i) fields >> skip;
  fields >> start >> vsize >> rss;
  if (!fields) return std::nullopt;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const long page = ::sysconf(_SC_PAGESIZE);
  ProcessStats s;
  s.cpu_seconds = static_cast<double>(utime + stime) / ticks;
  s.resident_bytes = static_cast<uint64_t>(rss) * static_cast<uint64_t>(page);
  s.virtual_bytes = vsize;
  if (auto boot = boot_time()) s.start_time_seconds = *boot + static_cast<double>(start) / ticks;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++s.open_fds;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) s.max_fds = limit.rlim_cur;
  return s;
}

}  // namespace natsfleet::health
