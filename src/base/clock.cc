#include "base/clock.h"

namespace natsfleet::base {
namespace {

class SteadyClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
};

}  // namespace

const Clock& Clock::steady() {
  static const SteadyClock clock;
  return clock;
}

}  // namespace natsfleet::base
