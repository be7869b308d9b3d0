// This process as the standard Prometheus process collector describes it, read from /proc.
#pragma once

#include <cstdint>
#include <optional>

namespace natsfleet::health {

struct ProcessStats {
  double cpu_seconds = 0;  // user + system
  uint64_t resident_bytes = 0;
  uint64_t virtual_bytes = 0;
  double start_time_seconds = 0;  // since the Unix epoch
  uint64_t open_fds = 0;
  uint64_t max_fds = 0;  // the soft limit
};

// Nothing when /proc cannot be read (not Linux, or hidden).
std::optional<ProcessStats> read_process_stats();

}  // namespace natsfleet::health
