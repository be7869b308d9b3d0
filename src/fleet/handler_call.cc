#include "fleet/handler_call.h"

#include <exception>
#include <string>

namespace natsfleet::fleet {

Disposition call_work_handler(const WorkHandler& handler, const Message& message,
                              SubscriptionStatus& status, std::chrono::milliseconds nak_after) {
  std::string why;
  try {
    return handler(message);
  } catch (const DownstreamUnavailable& e) {
    return Disposition::retry(e.after()).because(e.what());
  } catch (const std::exception& e) {
    why = std::string("the handler threw: ") + e.what();
  } catch (...) {
    why = "the handler threw something not derived from std::exception";
  }
  status.counters.handler_errors++;
  status.event_with(spdlog::level::debug, "handler-threw", {{"error", why}}, "work {}: {}",
                    status.name(), why);
  return Disposition::nak(nak_after).because(why);
}

}  // namespace natsfleet::fleet
