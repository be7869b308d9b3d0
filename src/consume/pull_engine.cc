#include "consume/pull_engine.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace natsfleet::consume {

PullEngine::PullEngine(nats::Connection& connection, Options options, Deliver deliver,
                       Signal signal)
    : connection_(connection),
      options_([&] {
        // The broker refuses a heartbeat larger than half the expiry.
        options.expires = std::max(options.expires, options.heartbeat * 3);
        options.batch = std::max(options.batch, 1);
        return options;
      }()),
      deliver_(std::move(deliver)),
      signal_(std::move(signal)),
      pull_subject_("$JS.API.CONSUMER.MSG.NEXT." + options_.stream + "." + options_.consumer),
      window_(options_.batch),
      gap_after_(options_.ack_wait.count() > 0
                     ? std::max(options_.ack_wait / 2, options_.heartbeat * 3)
                     : std::chrono::milliseconds(0)) {}

PullEngine::~PullEngine() { stop(); }

Result<void> PullEngine::start() {
  {
    std::lock_guard lock(mu_);
    running_ = true;
    requested_ = 0;
    buffered_ = 0;
  }
  if (auto subscribed = subscribe_inbox(); !subscribed) {
    std::lock_guard lock(mu_);
    running_ = false;
    return subscribed.error();
  }
  refill();
  return {};
}

Result<void> PullEngine::subscribe_inbox() {
  const std::string inbox = connection_.new_inbox();
  uint64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    generation = generation_ + 1;
  }
  auto sub = connection_.subscribe(inbox, "", [this, generation](nats::InboundMessage&& m) {
    on_message(std::move(m), generation);
  });
  if (!sub) return sub.error();
  std::unique_ptr<nats::Subscription> old;
  {
    std::lock_guard lock(mu_);
    if (!running_) return {};
    generation_ = generation;
    inbox_ = inbox;
    old = std::move(subscription_);
    subscription_ = std::move(sub.value());
    new_inbox_due_ = false;
    requested_ = 0;
    last_activity_ = Clock::now();
  }
  old.reset();  // outside the lock: it waits for a running delivery, which takes the lock
  return {};
}

void PullEngine::stop() {
  std::unique_ptr<nats::Subscription> sub;
  {
    std::lock_guard lock(mu_);
    running_ = false;
    sub = std::move(subscription_);
  }
  sub.reset();  // outside the lock: it waits for a running delivery, which takes the lock
}

void PullEngine::stop_pulling() {
  std::lock_guard lock(mu_);
  pulling_ = false;
}

int64_t PullEngine::outstanding() const {
  std::lock_guard lock(mu_);
  return requested_;
}

void PullEngine::on_message(nats::InboundMessage&& msg, uint64_t generation) {
  {
    std::lock_guard lock(mu_);
    if (!running_) return;
    if (generation != generation_ || new_inbox_due_) {
      if (msg.status == 0) ++stale_dropped_;
      return;
    }
    if (gap_locked(Clock::now())) {
      if (msg.status == 0) ++stale_dropped_;
      return;
    }
  }
  if (msg.status == 0) {
    {
      std::lock_guard lock(mu_);
      last_activity_ = Clock::now();
      if (requested_ > 0) --requested_;
      ++buffered_;
    }
    deliver_(std::move(msg));
    return;
  }
  PullStatus status = classify_pull_status(msg.status, msg.description, msg.headers);
  {
    std::lock_guard lock(mu_);
    if (!running_) return;
    last_activity_ = Clock::now();
    switch (status.signal) {
      case PullSignal::heartbeat:
      case PullSignal::no_messages:
      case PullSignal::other:
        return;
      case PullSignal::request_expired:
      case PullSignal::request_done:
        requested_ -= std::min<int64_t>(requested_, static_cast<int64_t>(status.pending_messages));
        break;
      default:
        break;
    }
  }
  if (status.signal == PullSignal::request_expired || status.signal == PullSignal::request_done) {
    refill();
    return;
  }
  signal_(status);
}

void PullEngine::message_done() {
  {
    std::lock_guard lock(mu_);
    if (buffered_ > 0) --buffered_;
  }
  refill();
}

bool PullEngine::gap_locked(Clock::time_point now) {
  if (gap_after_.count() <= 0 || requested_ == 0 || now - last_activity_ < gap_after_) return false;
  ++gaps_;
  new_inbox_due_ = true;
  requested_ = 0;
  return true;
}

void PullEngine::restart_pulls() {
  bool resubscribe = false;
  {
    std::lock_guard lock(mu_);
    // Restarting after a silence long enough to be a gap: what the old requests still bring
    // may be stale, so they get no listener.
    resubscribe = gap_locked(Clock::now()) || new_inbox_due_;
    requested_ = 0;
    last_activity_ = Clock::now();
  }
  if (resubscribe) (void)subscribe_inbox();
  refill();
}

void PullEngine::tick() {
  bool resubscribe = false;
  {
    std::lock_guard lock(mu_);
    resubscribe = running_ && (gap_locked(Clock::now()) || new_inbox_due_);
  }
  // A failure leaves new_inbox_due_ set: the next tick tries again.
  if (resubscribe) (void)subscribe_inbox();
  {
    std::lock_guard lock(mu_);
    // Every request was sent at or before last_pull_, so all have expired by now: any that did
    // not report back (a restarted broker forgets them) must not hold the pipeline.
    if (requested_ > 0 && Clock::now() - last_pull_ > options_.expires + options_.heartbeat)
      requested_ = 0;
  }
  refill();
}

bool PullEngine::heartbeat_missed() const {
  std::lock_guard lock(mu_);
  return running_ && requested_ > 0 && Clock::now() - last_activity_ > options_.heartbeat * 2;
}

void PullEngine::set_window(int messages) {
  std::lock_guard lock(mu_);
  normal_window_ = std::max(messages, 1);
  if (!held_back_) window_ = normal_window_;
}

void PullEngine::hold_back(bool on) {
  {
    std::lock_guard lock(mu_);
    if (held_back_ == on) return;
    held_back_ = on;
    if (on) normal_window_ = window_;
    window_ = on ? std::min<int64_t>(window_, 2) : normal_window_;
  }
  refill();
}

int PullEngine::window() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(window_);
}

int64_t PullEngine::buffered() const {
  std::lock_guard lock(mu_);
  return buffered_;
}

uint64_t PullEngine::pulls_sent() const {
  std::lock_guard lock(mu_);
  return pulls_sent_;
}

uint64_t PullEngine::gaps() const {
  std::lock_guard lock(mu_);
  return gaps_;
}

uint64_t PullEngine::stale_dropped() const {
  std::lock_guard lock(mu_);
  return stale_dropped_;
}

std::string PullEngine::pull_body(int64_t batch) const {
  using std::chrono::nanoseconds;
  nlohmann::json body = {
      {"batch", batch},
      {"expires", std::chrono::duration_cast<nanoseconds>(options_.expires).count()},
      {"idle_heartbeat", std::chrono::duration_cast<nanoseconds>(options_.heartbeat).count()},
  };
  return body.dump();
}

void PullEngine::refill() {
  int64_t want = 0;
  std::string reply;
  {
    std::lock_guard lock(mu_);
    if (!running_ || !pulling_ || new_inbox_due_) return;
    const int64_t in_hand = requested_ + buffered_;
    // Pipelining: ask again once half the window is free, so the next batch is in flight while
    // the current one is handled.
    if (in_hand > window_ / 2) return;
    want = window_ - in_hand;
    if (want <= 0) return;
    if (requested_ == 0) last_activity_ = Clock::now();  // heartbeats are owed from now on
    requested_ += want;
    last_pull_ = Clock::now();
    ++pulls_sent_;
    reply = inbox_;
  }
  // A failed publish (connection closing) is recovered by tick()/restart_pulls().
  (void)connection_.publish(pull_subject_, pull_body(want), reply);
}

}  // namespace natsfleet::consume
