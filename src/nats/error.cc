// nats.c's natsStatus as an error category (natsfleet's own and JetStream's are in base/error.cc).
#include <nats/nats.h>

#include <string>

#include "natsfleet/error.h"

namespace natsfleet {
namespace {

class NatsCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "nats"; }
  std::string message(int value) const override {
    return natsStatus_GetText(static_cast<natsStatus>(value));
  }
};

}  // namespace

const std::error_category& nats_category() noexcept {
  static const NatsCategory category;
  return category;
}

}  // namespace natsfleet
