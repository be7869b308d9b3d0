#include "fleet/supervisor_rules.h"

#include <gtest/gtest.h>

#include <string>

namespace natsfleet::fleet {
namespace {

using consume::PullSignal;
using consume::PullStatus;
using Lookup = ConsumerLifecycle::Lookup;

TEST(SupervisorRules, ALinkDownOrAReconnectSendsABoundSubscriptionToRecovering) {
  EXPECT_EQ(after_link(true, false).kind, Move::stay);
  const Move down = after_link(false, false);
  EXPECT_EQ(down.kind, Move::recover);
  EXPECT_EQ(down.why, "disconnected from the broker; reconnecting");
  // After a reconnect the consumer is looked up before pulling again: it may be gone.
  const Move back = after_link(true, true);
  EXPECT_EQ(back.kind, Move::recover);
  EXPECT_EQ(back.why, "reconnected; checking the consumer");
}

TEST(SupervisorRules, MissedHeartbeatsAreARecoveryAndAStoppedIntakeBindsAgain) {
  EXPECT_EQ(after_intake(true, false).kind, Move::stay);
  EXPECT_EQ(after_intake(true, true).kind, Move::recover);
  EXPECT_EQ(after_intake(true, true).why, "missed idle heartbeats");
  EXPECT_EQ(after_intake(false, true).kind, Move::rebind);  // the intake first
}

TEST(SupervisorRules, ADeletedConsumerStatusIsARecovery) {
  const SignalAction a = on_pull_status({.signal = PullSignal::consumer_deleted});
  EXPECT_EQ(a.move.kind, Move::recover);
  EXPECT_EQ(a.move.why, "pull answered: consumer deleted");
  EXPECT_FALSE(a.back_off);
}

TEST(SupervisorRules, PullsNobodyServesBackOffBeforeTheRecovery) {
  const SignalAction a = on_pull_status({.signal = PullSignal::no_responders});
  EXPECT_TRUE(a.back_off);
  EXPECT_EQ(a.move.kind, Move::recover);
  EXPECT_FALSE(a.restart_pulls);
}

TEST(SupervisorRules, ALeaderChangeSendsTheAcksAgainBeforeItPullsAgain) {
  const SignalAction a = on_pull_status({.signal = PullSignal::leadership_change});
  EXPECT_EQ(a.move.kind, Move::stay);
  EXPECT_TRUE(a.resend_acks);
  EXPECT_TRUE(a.restart_pulls);
}

TEST(SupervisorRules, TooManyWaitingPullsPullAgainAndStayBound) {
  const SignalAction a = on_pull_status({.signal = PullSignal::max_waiting});
  EXPECT_EQ(a.move.kind, Move::stay);
  EXPECT_TRUE(a.restart_pulls);
  EXPECT_FALSE(a.resend_acks);
}

TEST(SupervisorRules, ARefusedPullIsFatalAndAPushConsumerIsBoundAgain) {
  const SignalAction refused =
      on_pull_status({.signal = PullSignal::bad_request, .description = "Bad Request"});
  EXPECT_EQ(refused.move.kind, Move::fatal);
  EXPECT_EQ(refused.move.why, "the broker refused the pull request: Bad Request");
  EXPECT_EQ(on_pull_status({.signal = PullSignal::push_consumer}).move.kind, Move::rebind);
}

TEST(SupervisorRules, AConsumerFoundPresentIsPulledAgain) {
  EXPECT_EQ(after_lookup(Lookup::present, OnMissing::exit, "S", "c").kind,
            RecoveryAction::pull_again);
}

TEST(SupervisorRules, AnUnansweredLookupIsTriedAgainNeverTakenForMissing) {
  EXPECT_EQ(after_lookup(Lookup::unreachable, OnMissing::recreate, "S", "c").kind,
            RecoveryAction::retry);
  EXPECT_EQ(after_lookup(Lookup::unreachable, OnMissing::exit, "S", "c").kind,
            RecoveryAction::retry);
}

TEST(SupervisorRules, AMissingConsumerIsRemadeOrFatalAsOnMissingSays) {
  EXPECT_EQ(after_lookup(Lookup::consumer_missing, OnMissing::recreate, "S", "c").kind,
            RecoveryAction::remake);
  const RecoveryAction exit = after_lookup(Lookup::consumer_missing, OnMissing::exit, "S", "c");
  EXPECT_EQ(exit.kind, RecoveryAction::fatal);
  EXPECT_EQ(exit.why,
            "consumer c on stream S is missing on the broker (deleted, or lost with its store)");
}

TEST(SupervisorRules, AStreamThatWentIsFatalWhateverOnMissingSays) {
  for (const OnMissing on : {OnMissing::recreate, OnMissing::exit}) {
    const RecoveryAction a = after_lookup(Lookup::stream_missing, on, "S", "c");
    EXPECT_EQ(a.kind, RecoveryAction::fatal);
    EXPECT_EQ(a.why, "stream S no longer exists");
  }
}

}  // namespace
}  // namespace natsfleet::fleet
