#include "consume/queue_intake.h"

namespace natsfleet::consume {

QueueIntake::QueueIntake(nats::Connection& connection, std::string deliver_subject,
                         std::string group, Deliver deliver)
    : connection_(connection),
      deliver_subject_(std::move(deliver_subject)),
      group_(std::move(group)),
      deliver_(std::move(deliver)) {}

QueueIntake::~QueueIntake() { stop(); }

Result<void> QueueIntake::start() {
  auto sub = connection_.subscribe(deliver_subject_, group_, [this](nats::InboundMessage&& m) {
    // Without heartbeats or flow control configured, a status here is unexpected: skip it
    // rather than hand it to a handler as work.
    if (m.status != 0) return;
    served_at_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                     std::memory_order_relaxed);
    deliver_(std::move(m));
  });
  if (!sub) return sub.error();
  std::lock_guard lock(mu_);
  subscription_ = std::move(sub.value());
  return {};
}

void QueueIntake::stop() {
  std::unique_ptr<nats::Subscription> gone;
  {
    std::lock_guard lock(mu_);
    gone.swap(subscription_);
  }
  gone.reset();  // unsubscribes outside the lock: a running callback may be finishing
}

std::chrono::steady_clock::time_point QueueIntake::last_served() const {
  using Clock = std::chrono::steady_clock;
  return Clock::time_point(Clock::duration(served_at_.load(std::memory_order_relaxed)));
}

void QueueIntake::hold_back(bool on) {
  {
    std::lock_guard lock(mu_);
    if (held_back_ == on) return;
    held_back_ = on;
  }
  // The other members of the group get what this replica does not take meanwhile.
  if (on)
    stop();
  else
    (void)start();  // a failure shows as missing deliveries; the info poll still watches
}

}  // namespace natsfleet::consume
