// natsfleet's own error category and JetStream's err_code; nats.c's natsStatus category is in
// src/nats/error.cc, the only place that sees nats.c.
#include <string>

#include "natsfleet/error.h"

namespace natsfleet {
namespace {

class FleetCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "natsfleet"; }
  std::string message(int value) const override {
    switch (static_cast<Errc>(value)) {
      case Errc::not_connected:
        return "not connected to the broker";
      case Errc::timeout:
        return "the broker did not answer in time";
      case Errc::no_stream_for_subject:
        return "no stream holds the subject";
      case Errc::invalid_argument:
        return "invalid argument";
      case Errc::shutting_down:
        return "shutting down";
      case Errc::protocol:
        return "unexpected answer from the broker";
      case Errc::no_responders:
        return "no responders";
      case Errc::no_resources:
        return "out of system resources";
      case Errc::already_settled:
        return "the message was settled already";
    }
    return "natsfleet error " + std::to_string(value);
  }
};

class JetStreamCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "jetstream"; }
  std::string message(int value) const override {
    switch (value) {
      case kJsConsumerNotFound:
        return "consumer not found";
      case kJsStreamNotFound:
        return "stream not found";
      default:
        return "JetStream API error " + std::to_string(value);
    }
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const FleetCategory category;
  return category;
}
const std::error_category& jetstream_category() noexcept {
  static const JetStreamCategory category;
  return category;
}

const char* BadResultAccess::what() const noexcept { return what_.c_str(); }

}  // namespace natsfleet
