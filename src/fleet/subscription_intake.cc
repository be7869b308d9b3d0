#include "fleet/subscription_intake.h"

#include <utility>
#include <vector>

#include "consume/inbox_link.h"
#include "consume/pull_engine.h"
#include "consume/queue_intake.h"
#include "nats/connection.h"

namespace natsfleet::fleet {

SubscriptionIntake::SubscriptionIntake(FleetContext& context, std::function<void()> wake)
    : ctx_(context), wake_(std::move(wake)) {}

SubscriptionIntake::~SubscriptionIntake() { stop(); }

Result<void> SubscriptionIntake::install(const nats::ConsumerConfig& config,
                                         const std::string& stream, const std::string& consumer,
                                         const WorkSpec& spec, DeliveryPipeline& pipeline) {
  std::shared_ptr<consume::Intake> old;
  {
    std::lock_guard lock(mu_);
    if (closing_) return {};
    old = std::move(engine_);
  }
  // Outside the lock: stopping waits for a read under way, whose deliveries may take it. What
  // already reached the old inbox is handed on first, not left to wait out ack_wait.
  if (old) {
    old->drain();
    old->stop();
  }
  std::shared_ptr<consume::Intake> engine;
  if (!config.deliver_subject.empty()) {
    // On nats.c's thread: no lock here. A push consumer resends whatever waits past ack_wait.
    engine = std::make_shared<consume::QueueIntake>(
        *ctx_.connection, config.deliver_subject, config.deliver_group,
        [&pipeline](nats::InboundMessage&& m) { pipeline.take(std::move(m), true); });
  } else {
    consume::PullEngine::Options options{
        .stream = stream,
        .consumer = consumer,
        // A new intake (a rebind) starts with what the handlers were measured to finish.
        .batch = pipeline.window(),
        .expires = spec.flow.pull_expires,
        .heartbeat = heartbeat_of(spec),
        .ack_wait = spec.flow.ack_wait,
        .clock = ctx_.clock,
        // Idle handler threads read the inbox (read()), the supervisor what waits meanwhile.
        .owner_reads = true,
    };
    // Pulled work is bounded by the window, so the queue needs no bound and displaces nothing.
    engine = std::make_shared<consume::PullEngine>(
        std::make_unique<consume::ConnectionInboxLink>(*ctx_.connection), options,
        [&pipeline](std::vector<nats::InboundMessage>& batch) { pipeline.take_all(batch); },
        [this](const consume::PullStatus& s) { on_signal(s); });
  }
  if (auto started = engine->start(); !started) return started.error();
  if (pipeline.downstream_down()) engine->hold_back(true);
  std::lock_guard lock(mu_);
  if (closing_) {
    engine->stop();
    return {};
  }
  deliver_subject_ = config.deliver_subject;
  engine_ = std::move(engine);
  return {};
}

bool SubscriptionIntake::restart_if_serving(const nats::ConsumerConfig& config) {
  std::lock_guard lock(mu_);
  if (!engine_ || config.deliver_subject != deliver_subject_) return false;
  engine_->restart_pulls();
  return true;
}

bool SubscriptionIntake::restart_pulls() {
  std::lock_guard lock(mu_);
  if (!engine_) return false;
  engine_->restart_pulls();
  return true;
}

SubscriptionIntake::Check SubscriptionIntake::check() {
  drain();  // heartbeats that wait unread while every handler thread is busy count too
  std::lock_guard lock(mu_);
  Check check;
  if (!engine_) return check;
  check.running = true;
  // Read before tick(): a silence long enough to be a gap (a lookup that blocked the
  // supervisor past it, say) is dropped there with the pulls that owed heartbeats, and the new
  // pulls owe none yet.
  check.missed_heartbeats = engine_->heartbeat_missed();
  engine_->tick();
  if (const uint64_t gaps = engine_->gaps(); gaps != gaps_seen_) {
    gaps_seen_ = gaps;
    check.new_gap = true;
    check.stale_dropped = engine_->stale_dropped();
  }
  return check;
}

void SubscriptionIntake::on_signal(const consume::PullStatus& status) {
  {
    std::lock_guard lock(signal_mu_);
    signal_ = status;
  }
  wake_();
}

std::optional<consume::PullStatus> SubscriptionIntake::take_signal() {
  std::lock_guard lock(signal_mu_);
  std::optional<consume::PullStatus> taken;
  taken.swap(signal_);
  return taken;
}

void SubscriptionIntake::clear_signal() {
  std::lock_guard lock(signal_mu_);
  signal_.reset();
}

Clock::time_point SubscriptionIntake::last_served() const {
  std::lock_guard lock(mu_);
  return engine_ ? engine_->last_served() : Clock::time_point{};
}

void SubscriptionIntake::stop_pulling() {
  std::lock_guard lock(mu_);
  closing_ = true;
  if (engine_) engine_->stop_pulling();
}

int64_t SubscriptionIntake::outstanding() const {
  std::lock_guard lock(mu_);
  return engine_ ? engine_->outstanding() : 0;
}

std::shared_ptr<consume::Intake> SubscriptionIntake::current() const {
  std::lock_guard lock(mu_);
  return engine_;
}

void SubscriptionIntake::stop() {
  if (auto engine = current()) engine->stop();  // outside the lock, as in install()
}

void SubscriptionIntake::drain() {
  if (auto engine = current()) engine->drain();
}

bool SubscriptionIntake::read(std::chrono::milliseconds wait) {
  auto engine = current();
  return engine && engine->read(wait);
}

void SubscriptionIntake::message_done() {
  std::lock_guard lock(mu_);
  if (engine_) engine_->message_done();
}

void SubscriptionIntake::message_back() {
  std::lock_guard lock(mu_);
  if (engine_) engine_->message_back();
}

void SubscriptionIntake::hold_back(bool hold) {
  std::lock_guard lock(mu_);
  if (engine_) engine_->hold_back(hold);
}

void SubscriptionIntake::set_window(int messages) {
  std::lock_guard lock(mu_);
  if (engine_) engine_->set_window(messages);
}

}  // namespace natsfleet::fleet
