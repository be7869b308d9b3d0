// DeliveryPipeline's deferred verdicts (a handler returned Disposition::later()): the verdict
// given later from any thread, and the keep-alive of messages still waiting for one.
#include <spdlog/spdlog.h>

#include "consume/ack_metadata.h"
#include "fleet/delivery_control.h"
#include "fleet/delivery_pipeline.h"

namespace natsfleet::fleet {

using std::chrono::milliseconds;

Result<void> DeliveryPipeline::settle_deferred(const DeliveryControl& delivery,
                                               Disposition verdict) {
  std::optional<Deferred> waiting;
  {
    std::lock_guard lock(deferred_mu_);
    auto it = deferred_.find(&delivery);
    if (it != deferred_.end()) {
      waiting.emplace(std::move(it->second));
      deferred_.erase(it);
    }
  }
  if (!waiting)  // not reached: the control refuses a second verdict
    return Result<void>(Errc::already_settled, "settle: this delivery's verdict was given already");
  auto sent = conclude(waiting->message, waiting->turn, std::move(verdict), false);
  deferred_settled_.notify_all();
  return sent;
}

size_t DeliveryPipeline::awaiting_verdict() const {
  std::lock_guard lock(deferred_mu_);
  return deferred_.size();
}

void DeliveryPipeline::keep_deferred_alive(Clock::time_point now) {
  std::vector<std::string> due, unfetched;
  std::vector<Message> overran;
  {
    std::lock_guard lock(deferred_mu_);
    for (auto it = deferred_.begin(); it != deferred_.end();) {
      Deferred& d = it->second;
      if (d.overran) {
        // No in-progress ack for ack_wait: the broker has redelivered it.
        if (now - d.touched >= spec_.flow.ack_wait && d.control->close(Errc::timeout)) {
          it = deferred_.erase(it);
          continue;
        }
      } else if (spec_.flow.keep_alive_limit <= milliseconds(0)) {
        d.overran = true;  // no keep-alive at all
      } else if (now - d.turn.started >= spec_.flow.keep_alive_limit) {
        // Still waiting for a pull work's fetch: given back, as a message waiting for a handler.
        if (d.control->close_unheld(Errc::timeout)) {
          unfetched.push_back(d.message.reply());
          it = deferred_.erase(it);
          continue;
        }
        d.overran = true;
        overran.push_back(d.message);
      } else if (now - d.touched >= keep_alive_every_) {
        due.push_back(d.message.reply());
        d.touched = now;
      }
      ++it;
    }
  }
  for (const auto& reply : due) (void)send(reply, consume::kInProgressBody);
  status_.counters.kept_alive += due.size();
  for (const auto& message : overran)
    status_.event(spdlog::level::warn, "keep-alive-limit",
                  "work {}: stream sequence {} has waited for its verdict (Disposition::later) "
                  "over {} ms (keep_alive_limit); it gets no more in-progress acks, so the broker "
                  "redelivers it after ack_wait",
                  spec_.name, message.stream_seq(), spec_.flow.keep_alive_limit.count());
  if (!unfetched.empty())
    status_.event(spdlog::level::warn, "keep-alive-limit",
                  "work {}: {} message(s) waited over {} ms (keep_alive_limit) for a fetch; gave "
                  "them back for another replica",
                  spec_.name, unfetched.size(), spec_.flow.keep_alive_limit.count());
  for (const auto& reply : unfetched) {
    status_.counters.naked++;
    (void)send(reply, consume::nak_body(milliseconds(0)));
  }
  if (!overran.empty() || !unfetched.empty()) deferred_settled_.notify_all();
}

}  // namespace natsfleet::fleet
