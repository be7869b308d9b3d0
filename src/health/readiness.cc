#include "health/readiness.h"

#include <vector>

namespace natsfleet::health {

ReadinessVerdict readiness(const FleetHealth& health) {
  std::vector<std::string> reasons;
  if (!health.live) {
    reasons.push_back(health.fatal_reason.empty() ? std::string("fatal")
                                                  : "fatal: " + health.fatal_reason);
  }
  if (!health.connected) reasons.emplace_back("not connected to the broker");
  for (const auto& s : health.subscriptions) {
    if (s.downstream_down) {
      reasons.push_back(s.kind + " " + s.name + ": the downstream is down (" + s.downstream_error +
                        "); " + std::to_string(s.held) + " message(s) held for a retry");
      if (s.state == SubscriptionState::bound) continue;
    }
    if (s.state == SubscriptionState::bound) continue;
    std::string why = s.kind + " " + s.name + " is " + to_string(s.state);
    if (!s.last_error.empty()) why += ": " + s.last_error;
    reasons.push_back(std::move(why));
  }
  // The fleet's own flag may know something the snapshot does not show (it is computed under
  // the fleet's lock); never report ready against it.
  if (reasons.empty() && !health.ready) reasons.emplace_back("the fleet reports not ready");

  ReadinessVerdict verdict;
  verdict.ready = reasons.empty();
  for (const auto& r : reasons) {
    if (!verdict.reason.empty()) verdict.reason += "; ";
    verdict.reason += r;
  }
  return verdict;
}

}  // namespace natsfleet::health
