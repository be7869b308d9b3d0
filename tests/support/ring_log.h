// A logger that keeps its last lines in memory, for tests that read what was logged.
#pragma once

#include <spdlog/logger.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include <algorithm>
#include <memory>
#include <string>

namespace natsfleet::testing {

class RingLog {
 public:
  explicit RingLog(size_t lines = 2000)
      : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(lines)),
        log_(std::make_shared<spdlog::logger>("ring", sink_)) {
    log_->set_level(spdlog::level::debug);
  }
  spdlog::logger& log() { return *log_; }
  const std::shared_ptr<spdlog::logger>& shared() const { return log_; }
  // Lines kept that contain `text`.
  size_t lines_with(const std::string& text) const {
    const auto lines = sink_->last_formatted();
    return static_cast<size_t>(std::count_if(lines.begin(), lines.end(), [&](const auto& l) {
      return l.find(text) != std::string::npos;
    }));
  }
  size_t lines() const { return sink_->last_formatted().size(); }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace natsfleet::testing
