// Health as natsfleet reports it: live unless fatal, ready only when every subscription is bound.
// Plain values: Fleet::health() returns a snapshot the caller owns (any thread; copy it freely).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "natsfleet/export.h"

namespace natsfleet {

enum class SubscriptionState { binding, bound, recovering, stalled, fatal, stopped };

NATSFLEET_API const char* to_string(SubscriptionState state) noexcept;

struct SubscriptionCounters {
  uint64_t received = 0;  // deliveries handed to the handler
  uint64_t acked = 0;
  uint64_t naked = 0;
  uint64_t termed = 0;
  uint64_t redelivered = 0;  // deliveries with a delivered count above 1
  uint64_t handler_errors = 0;
  uint64_t recoveries = 0;  // consumer recreated or pulls restarted after missed heartbeats
  uint64_t retried = 0;     // retryable failures (Disposition::retry): no delivery used
  uint64_t dead_lettered = 0;
  uint64_t dropped = 0;  // core broadcasts only: dropped from a full queue
  // In-progress acks natsfleet sent for messages that waited on this replica, or were handled,
  // for a third of ack_wait (see WorkFlow::ack_wait).
  uint64_t kept_alive = 0;

  // Adds another subscription's counts (a work made of several, such as ordered work's
  // partitions).
  SubscriptionCounters& operator+=(const SubscriptionCounters& o) {
    received += o.received;
    acked += o.acked;
    naked += o.naked;
    termed += o.termed;
    redelivered += o.redelivered;
    handler_errors += o.handler_errors;
    recoveries += o.recoveries;
    retried += o.retried;
    dead_lettered += o.dead_lettered;
    dropped += o.dropped;
    kept_alive += o.kept_alive;
    return *this;
  }
};
static_assert(sizeof(SubscriptionCounters) == 11 * sizeof(uint64_t),
              "a new counter is added in SubscriptionCounters::operator+= too");

struct SubscriptionHealth {
  std::string name{};
  std::string kind{};  // "work" or "broadcast"
  std::string subject{};
  std::string stream{};
  std::string consumer{};
  // Never bound while the fleet is not connected: recovering then, last_error saying why.
  SubscriptionState state = SubscriptionState::binding;
  std::string last_error{};
  SubscriptionCounters counters{};
  uint64_t consumer_pending = 0;      // from the last consumer info
  uint64_t consumer_ack_pending = 0;  // from the last consumer info
  uint64_t ack_floor = 0;  // stream sequence: all at or below it acked, as last seen on the broker
  // The downstream is down (retryable failures across messages): messages are held, not pulled.
  bool downstream_down = false;
  std::string downstream_error{};  // the last retryable failure, while down
  uint64_t held = 0;               // messages held for a retry
  // Per-key ordered work (WorkSpec::per_key): its partitions, each owned by one replica at a
  // time under a lease (docs/tutorial/library.md, "Ordered work").
  int partitions = 0;
  std::vector<int> partitions_owned{};  // by this replica now: its lease held, its reader reading
  uint64_t leases_taken = 0;            // partitions this replica began to own
  uint64_t leases_lost = 0;  // taken by another replica while this one held them: it stopped
  uint64_t rewinds = 0;      // a partition's reader read again from its checkpoint (a hole)
};

struct FleetHealth {
  bool live = true;    // false once a fatal state was reached
  bool ready = false;  // every subscription bound
  bool connected = false;
  uint64_t reconnects = 0;
  // While not connected: why the broker cannot be reached, per server (a name that does not
  // resolve, a refused port, no answer, no NATS handshake) and as the client last reported it.
  std::string broker_error{};
  std::string fatal_reason{};
  std::vector<SubscriptionHealth> subscriptions{};
};

}  // namespace natsfleet
