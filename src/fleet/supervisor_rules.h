// The supervisor's decisions as functions of what it saw: ConsumerSubscription's state machine
// (bound <-> recovering, binding again, fatal) without its waits and broker calls, so each rule
// is unit-tested (tests/unit/fleet/supervisor_rules_test.cc). The subscription gathers what is
// seen, asks here what follows, and does it.
#pragma once

#include <string>

#include "consume/pull_status.h"
#include "fleet/consumer_lifecycle.h"
#include "natsfleet/spec.h"

namespace natsfleet::fleet {

// Where the subscription goes next; `why` is what its status says.
struct Move {
  enum Kind { stay, recover, rebind, fatal } kind = stay;
  std::string why;
};

// A bound subscription's tick, before its pull status: a link down or a reconnect since the
// last tick sends it to recovering (the consumer is looked up before pulling again).
Move after_link(bool connected, bool reconnected);

// What a pull's status asks of a bound subscription.
struct SignalAction {
  Move move;                 // stay: keep consuming
  bool resend_acks = false;  // first: a new consumer leader may lag the old one
  bool restart_pulls = false;
  // Nobody serves the pulls: wait (longer each time), then ask the watch whether the consumer is
  // unserved; `move` (recover) holds the reason when it is not.
  bool back_off = false;
};
SignalAction on_pull_status(const consume::PullStatus& status);

// After the status: an intake that stopped binds again; missed idle heartbeats are a recovery.
Move after_intake(bool running, bool missed_heartbeats);

// What a recovering subscription does once its consumer was looked up.
struct RecoveryAction {
  enum Kind {
    pull_again,  // present: resend acks, pull again, bound
    retry,       // unreachable: ask the watch, then wait and look again
    remake,      // missing, on_missing = recreate: make it anew after the ack floor, bound
    fatal,       // the stream went, or missing with on_missing = exit
  } kind = pull_again;
  std::string why;  // for fatal
};
RecoveryAction after_lookup(ConsumerLifecycle::Lookup found, OnMissing on_missing,
                            const std::string& stream, const std::string& consumer);

}  // namespace natsfleet::fleet
