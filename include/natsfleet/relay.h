// The relay: status for a member reaches every session of that member on every replica.
//
// Work is handled by one replica; the member's browser is attached to some other replica (each
// replica's sessions live in its own memory). So the handler publishes the status once, and the
// relay on every replica delivers it to the sessions that replica holds for that key.
//
//   natsfleet::Relay relay(fleet, {.name = "sync-status"});
//   // A browser of alice attached here:
//   if (auto id = relay.attach("alice", session); !id) die(id.error().describe());
//   ...
//   // In the work handler, on whichever replica handled it:
//   if (!relay.publish("alice", R"({"state":"synced"})", msg_id))
//     return natsfleet::Disposition::retry();  // held and tried again, not lost
//   return natsfleet::Disposition::ack();
//
// Browsers reach the sessions through natsfleet::RelayGateway (natsfleet/relay_gateway.h), or
// through a WebSocket server of the service's own that calls attach() and detach().
//
// With the default JetStream source, statuses go through a stream the relay creates
// (RELAY_<NAME>): a status published while a replica is away or the broker restarts is
// delivered once the replica is back, and a publish repeated with the same message id (a
// redelivered work message) is dropped by the stream and again by each replica.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "natsfleet/error.h"
#include "natsfleet/export.h"
#include "natsfleet/fleet.h"
#include "natsfleet/spec.h"

namespace natsfleet {

// One client connection that takes statuses (a WebSocket, say). Called from any thread,
// concurrently; must never block: deliver() queues or refuses.
class NATSFLEET_API RelaySession {
 public:
  virtual ~RelaySession() = default;
  // One status; the payload is shared by every session it goes to. False when the session is
  // closed or could not take it (its queue is full: the session then closes itself).
  virtual bool deliver(std::shared_ptr<const std::string> payload) = 0;
  // True once the session takes nothing more; it is forgotten at the next delivery.
  virtual bool closed() const = 0;
};

using SessionId = std::uint64_t;

struct RelayOptions {
  std::string name = "relay";  // the broadcast's name (health, logs); a subject token
  // Statuses for key K travel on "<subject_prefix>.K". Default: "natsfleet.relay.<name>".
  std::string subject_prefix{};
  BroadcastSource source = BroadcastSource::jetstream;
  // jetstream: the stream holding the statuses, created when absent. Default "RELAY_<NAME>".
  std::string stream{};
  std::chrono::milliseconds stream_max_age = std::chrono::minutes(10);
  std::chrono::milliseconds publish_timeout = std::chrono::seconds(2);
  std::chrono::milliseconds heartbeat = std::chrono::seconds(5);
  // Message ids each replica remembers, so a status published twice is delivered once.
  size_t remembered_ids = 4096;
};

struct RelayStats {
  uint64_t received = 0;    // statuses this replica's subscription got
  uint64_t duplicates = 0;  // dropped: their message id was seen already
  uint64_t delivered = 0;   // status x session deliveries
  uint64_t dropped = 0;     // refused by a session (closed, or too slow)
  uint64_t unrouted = 0;    // statuses for a key with no session here (normal in a fleet)
  uint64_t superseded = 0;  // not delivered: its event is older than one delivered for the key
  // publish() calls that stored nothing: the stream held a status of the key's as new or newer
  uint64_t superseded_at_publish = 0;
  size_t keys = 0;  // keys with a session here
  size_t sessions = 0;
  bool subscribed = false;  // the relay's subscription exists (it binds in the background)
};

// Thread safety: every member function may be called from any thread (handlers, WebSocket
// threads) at the same time as any other; the destructor after every other call has returned.
class NATSFLEET_API Relay {
 public:
  Relay(Fleet& fleet, RelayOptions options);
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // Registers a session under `key` (a subject token: no '.', '*', '>' or spaces) and makes sure
  // the relay's subscription exists: idempotent, checked on every attach, and once it exists the
  // fleet binds it with backoff while the broker is away and re-establishes it after outages.
  [[nodiscard]] Result<SessionId> attach(const std::string& key,
                                         std::shared_ptr<RelaySession> session);
  void detach(SessionId id);

  // Makes sure the subscription exists without a session (a replica that wants statuses from
  // the start). attach() calls it.
  [[nodiscard]] Result<void> ensure_subscribed();

  // Publishes a status for `key` once, from the replica that handled the work. `msg_id` (the
  // work message's stream and sequence, say) makes a repeated publish a no-op. With the
  // JetStream source, returns once the stream has stored it (an error when it could not: return
  // Disposition::retry() for the work message, so it is held and tried again).
  //
  // `event` puts a key's statuses in event order: the stream sequence of the work message the
  // status reports, say (0: arrival order). Replicas handle a key's events concurrently, and an
  // event a dead replica held is handled again only after ack_wait, so its status can be
  // published after a newer event's. Each replica then delivers a status only when its event is
  // newer than the last one delivered for the key (RelayStats::superseded counts the others),
  // so a page never goes back to an older status, and a session that attaches later is handed
  // the newest event's status, not the last one published. With the JetStream source the stream
  // keeps that order too: a status is stored only while the newest the stream holds for the key
  // is an older event's (read, then stored on condition that nothing came between; one more
  // request per publish), otherwise publish() stores nothing and succeeds
  // (RelayStats::superseded_at_publish). So a replica that subscribes later starts from each
  // key's newest event.
  [[nodiscard]] Result<void> publish(const std::string& key, const std::string& payload,
                                     const std::string& msg_id, uint64_t event = 0);

  RelayStats stats() const;

  class Impl;

 private:
  friend class RelayGateway;  // registers the sessions it accepts with this relay
  std::unique_ptr<Impl> impl_;
};

// Whether `key` can be a relay key; fails with Errc::invalid_argument saying why not.
[[nodiscard]] NATSFLEET_API Result<void> check_relay_key(std::string_view key);

}  // namespace natsfleet
