// The audit's rules: pure functions over two broker snapshots taken an interval apart (and the
// daemon config, when given), so each rule is tested without a broker.
//
//   auto findings = consumer_findings(first, second, std::chrono::seconds(3));
//   auto more = work_findings(config, second);
//
// Consumer rules (a consumer is judged only when it is in both snapshots):
//   unbound-push      a push consumer nobody subscribes to, with messages waiting
//   idle-pull         a pull durable with pending messages that nobody pulls and that moved not at
//                     all between the snapshots
//   stalled           max_ack_pending reached and the ack floor did not move: the broker delivers
//                     nothing more until acks arrive
//   redelivery-storm  most unacked messages were delivered more than once, in both snapshots
//   predecessor-left  a consumer a migration replaced (its successor exists) that nobody is bound
//                     to any more: safe to delete. A predecessor still bound gets no finding at
//                     all: a replica of an older release still consumes it.
// Config rules, per [[work]]:
//   work-no-stream, work-wrong-stream, work-missing, work-wrong-shape, stream-differs (the work
//   declares its stream, and the broker's differs from the declaration)
// Dead-letter rules, per [[work]] with a dead_letter subject:
//   dead-letter-stream-missing  no stream holds the subject: the work cannot keep what it gives up
//   dead-letters                the subject holds messages (growing: more in the second sample)
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "audit/broker_snapshot.h"
#include "config/daemon_config.h"

namespace natsfleet::audit {

struct Finding {
  std::string stream;  // empty when no stream applies (work-no-stream)
  std::string consumer;
  std::string finding;  // the rule's name, e.g. "unbound-push"
  std::string evidence;
  std::string action;
};

// num_redelivered counts unacked messages delivered more than once (the broker forgets a
// message's count once it is acked), so it is compared with the unacked messages, not with all
// deliveries ever: a storm is when at least `min_redelivered` of them, and at least `min_share`
// of all unacked messages, are redeliveries, in both snapshots. One dead replica's work taken over
// after ack_wait is acked at once and clears before the second snapshot.
struct StormThresholds {
  uint64_t min_redelivered = 10;
  double min_share = 0.5;
};

// The consumer rules, in the second snapshot's order.
std::vector<Finding> consumer_findings(const BrokerSnapshot& first, const BrokerSnapshot& second,
                                       std::chrono::milliseconds interval,
                                       const StormThresholds& storm = {});

// The config rules for each [[work]] of `config`, judged against `snapshot`, in config order.
std::vector<Finding> work_findings(const config::DaemonConfig& config,
                                   const BrokerSnapshot& snapshot);

// The dead-letter rules for each [[work]] of `config` with a dead_letter, in config order. The
// counts come from the snapshots' subject_messages (read_snapshot's count_subjects).
std::vector<Finding> dead_letter_findings(const config::DaemonConfig& config,
                                          const BrokerSnapshot& first,
                                          const BrokerSnapshot& second);

}  // namespace natsfleet::audit
