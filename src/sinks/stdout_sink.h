// Writes one sink record a line to stdout (or another stdio stream), for broadcasts that a
// supervising process or a log pipeline reads.
#pragma once

#include <cstdio>
#include <mutex>
#include <string>

#include "sinks/sink.h"

namespace natsfleet::sinks {

class StdoutSink : public Sink {
 public:
  // `out` is not owned; it must outlive the sink. Tests pass a temporary file.
  explicit StdoutSink(std::FILE* out = stdout) : out_(out) {}

  // Acks once the line is flushed to the OS; naks when the stream reports an error.
  SinkResult deliver(const Message& message, const std::string& subscription) override;
  std::string describe() const override { return "stdout"; }
  void stop() override;

 private:
  std::mutex mu_;
  std::FILE* out_;
  bool stopped_ = false;
};

}  // namespace natsfleet::sinks
