#include "fleet/supervisor_rules.h"

namespace natsfleet::fleet {

Move after_link(bool connected, bool reconnected) {
  if (!connected) return {Move::recover, "disconnected from the broker; reconnecting"};
  if (reconnected) return {Move::recover, "reconnected; checking the consumer"};
  return {};
}

SignalAction on_pull_status(const consume::PullStatus& status) {
  using consume::PullSignal;
  const std::string answered = std::string("pull answered: ") + consume::to_string(status.signal);
  switch (status.signal) {
    case PullSignal::no_responders:
      // The consumer exists but nobody serves its pulls (no leader): docs/design/recovery.md,
      // "Pulls nobody serves".
      return {.move = {Move::recover, answered}, .back_off = true};
    case PullSignal::consumer_deleted:
      return {.move = {Move::recover, answered}};
    case PullSignal::bad_request:
      return {.move = {Move::fatal, "the broker refused the pull request: " + status.description}};
    case PullSignal::push_consumer:
      return {.move = {Move::rebind, "consumer became push based on the broker; binding again"}};
    case PullSignal::leadership_change:
      return {.resend_acks = true, .restart_pulls = true};
    default:
      return {.restart_pulls = true};
  }
}

Move after_intake(bool running, bool missed_heartbeats) {
  if (!running) return {Move::rebind, "pull engine not running"};
  if (missed_heartbeats) return {Move::recover, "missed idle heartbeats"};
  return {};
}

RecoveryAction after_lookup(ConsumerLifecycle::Lookup found, OnMissing on_missing,
                            const std::string& stream, const std::string& consumer) {
  using Lookup = ConsumerLifecycle::Lookup;
  switch (found) {
    case Lookup::present:
      return {RecoveryAction::pull_again, {}};
    case Lookup::unreachable:
      return {RecoveryAction::retry, {}};
    case Lookup::stream_missing:
      return {RecoveryAction::fatal, "stream " + stream + " no longer exists"};
    case Lookup::consumer_missing:
      if (on_missing == OnMissing::exit)
        return {RecoveryAction::fatal, "consumer " + consumer + " on stream " + stream +
                                           " is missing on the broker (deleted, or lost with its "
                                           "store)"};
      return {RecoveryAction::remake, {}};
  }
  return {RecoveryAction::retry, {}};
}

}  // namespace natsfleet::fleet
