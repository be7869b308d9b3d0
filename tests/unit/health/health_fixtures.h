// Health snapshots the health unit tests share: a work subscription that is bound and busy, and
// a broadcast that is recovering.
#pragma once

#include "natsfleet/health.h"

namespace natsfleet::testing {

inline SubscriptionHealth busy_work() {
  SubscriptionHealth s;
  s.name = "mail-relay";
  s.kind = "work";
  s.subject = "mail.outgoing";
  s.stream = "MAIL";
  s.consumer = "mail-relay";
  s.state = SubscriptionState::bound;
  s.counters = {.received = 1017,
                .acked = 1001,
                .naked = 11,
                .termed = 3,
                .redelivered = 13,
                .handler_errors = 5,
                .recoveries = 2};
  s.consumer_pending = 42;
  s.consumer_ack_pending = 7;
  s.ack_floor = 99991;
  return s;
}

inline SubscriptionHealth recovering_broadcast() {
  SubscriptionHealth s;
  s.name = "status";
  s.kind = "broadcast";
  s.subject = "member.*.status";
  s.state = SubscriptionState::recovering;
  s.last_error = "missed idle heartbeats";
  s.counters = {.received = 64,
                .acked = 0,
                .naked = 0,
                .termed = 0,
                .redelivered = 0,
                .handler_errors = 1,
                .recoveries = 4};
  return s;
}

inline FleetHealth two_subscriptions() {
  FleetHealth h;
  h.live = true;
  h.ready = false;
  h.connected = true;
  h.reconnects = 6;
  h.subscriptions = {busy_work(), recovering_broadcast()};
  return h;
}

}  // namespace natsfleet::testing
