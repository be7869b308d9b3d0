#include "sinks/stdout_sink.h"

#include <cerrno>
#include <cstring>

#include "sinks/record.h"

namespace natsfleet::sinks {
void StdoutSink::stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
}

SinkResult StdoutSink::deliver(const Message& message, const std::string& subscription) {
  try {
    std::string line = record_json(message, subscription);
    line += '\n';
    std::lock_guard lock(mu_);
    if (stopped_) return SinkResult{Disposition::retry(), {}, "stdout sink stopped"};
    errno = 0;
    // The flush under the lock is what makes a line reach the OS before the ack, and whole.
    if (std::fwrite(line.data(), 1, line.size(), out_) != line.size() || std::fflush(out_) != 0) {
      const int err = errno;
      std::clearerr(out_);
      return SinkResult{
          Disposition::retry(),
          {},
          std::string("write stdout: ") + (err != 0 ? std::strerror(err) : "stream error")};
    }
    return {};
  } catch (const std::exception& e) {
    return SinkResult{Disposition::retry(), {}, std::string("stdout sink: ") + e.what()};
  }
}

}  // namespace natsfleet::sinks
