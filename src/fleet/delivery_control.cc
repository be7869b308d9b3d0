#include "fleet/delivery_control.h"

#include <mutex>

#include "consume/ack_metadata.h"
#include "fleet/transport.h"

namespace natsfleet {
namespace fleet {

Result<void> DeliveryLink::in_progress(const std::string& reply) {
  std::shared_lock lock(mu_);
  if (detached_)
    return Result<void>(Errc::shutting_down,
                        "in_progress: the subscription that delivered this message has stopped");
  if (transport_ == nullptr) return {};
  return transport_->publish(reply, consume::kInProgressBody);
}

Result<void> DeliveryLink::settle(const DeliveryControl& delivery, Disposition verdict) {
  std::shared_lock lock(mu_);
  if (detached_)
    return Result<void>(Errc::shutting_down,
                        "settle: the subscription that delivered this message has stopped; it "
                        "was given back to the broker");
  if (settler_ == nullptr)
    return Result<void>(Errc::invalid_argument, "settle: this subscription takes no verdict");
  return settler_->settle_deferred(delivery, std::move(verdict));
}

void DeliveryLink::detach() {
  stop_.request_stop();
  std::unique_lock lock(mu_);
  detached_ = true;
}

}  // namespace fleet

namespace {

Result<void> refused(Errc why) {
  switch (why) {
    case Errc::shutting_down:
      return Result<void>(why,
                          "settle: the subscription stopped and gave this message back to the "
                          "broker");
    case Errc::timeout:
      return Result<void>(why,
                          "settle: the message waited for its verdict past keep_alive_limit and "
                          "ack_wait; the broker has redelivered it");
    default:
      return Result<void>(Errc::already_settled,
                          "settle: this delivery's verdict was given already");
  }
}

}  // namespace

Result<void> DeliveryControl::settle(Disposition verdict) {
  if (!settleable_)
    return Result<void>(Errc::invalid_argument,
                        "settle: only a work message takes a verdict after its handler returned "
                        "(ordered work and broadcasts take the handler's return)");
  if (verdict.kind() == Disposition::Kind::later)
    return Result<void>(Errc::invalid_argument,
                        "settle: later() is what a handler returns, not a verdict");
  {
    std::lock_guard lock(mu_);
    switch (state_) {
      case State::handling:
        early_ = std::move(verdict);
        state_ = State::settled_early;
        return {};
      case State::settled_early:
        return refused(Errc::already_settled);
      case State::done:
        return refused(closed_);
      case State::deferred:
        state_ = State::done;
        break;
    }
  }
  return link_->settle(*this, std::move(verdict));
}

DeliveryControl::Next DeliveryControl::handler_returned(Disposition returned) {
  std::lock_guard lock(mu_);
  switch (state_) {
    case State::settled_early:
      state_ = State::done;
      return {Next::Step::carry_out, std::move(early_)};
    case State::done:  // close()d while the handler ran
      return {Next::Step::taken, std::nullopt};
    case State::handling:
    case State::deferred:  // not reached: handler_returned is called once
      break;
  }
  if (returned.kind() == Disposition::Kind::later) {
    state_ = State::deferred;
    return {Next::Step::wait, std::nullopt};
  }
  state_ = State::done;
  return {Next::Step::carry_out, std::move(returned)};
}

bool DeliveryControl::take_for_application() {
  std::lock_guard lock(mu_);
  if (state_ == State::done) return false;
  with_application_.store(true, std::memory_order_release);
  return true;
}

bool DeliveryControl::close_unheld(Errc why) {
  std::lock_guard lock(mu_);
  if (with_application_.load(std::memory_order_acquire) || state_ == State::settled_early ||
      state_ == State::done)
    return false;
  state_ = State::done;
  closed_ = why;
  return true;
}

bool DeliveryControl::close(Errc why) {
  std::lock_guard lock(mu_);
  if (state_ == State::settled_early || state_ == State::done) return false;
  state_ = State::done;
  closed_ = why;
  return true;
}

}  // namespace natsfleet

namespace natsfleet {

Result<void> Message::in_progress() const {
  if (!control_ || reply_.empty()) return {};
  return control_->in_progress(reply_);
}

std::stop_token Message::stop_token() const {
  return control_ ? control_->stop_token() : std::stop_token();
}

Result<void> Message::settle(Disposition verdict) const {
  if (!control_)
    return Result<void>(Errc::invalid_argument,
                        "settle: this Message was not delivered by a fleet");
  return control_->settle(std::move(verdict));
}

Result<void> Message::ack() const { return settle(Disposition::ack()); }

Result<void> Message::nak(std::chrono::milliseconds delay) const {
  return settle(Disposition::nak(delay));
}

Result<void> Message::term(std::string reason) const {
  return settle(Disposition::term().because(std::move(reason)));
}

}  // namespace natsfleet
