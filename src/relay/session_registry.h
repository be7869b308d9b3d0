// Which live sessions this replica holds for each member, so a status published once reaches every
// browser of that member attached here, and nobody else's.
//
//   SessionRegistry registry;
//   const SessionId id = registry.add("alice", session);   // a transport attaches a session
//   registry.deliver("alice", std::make_shared<const std::string>(status_json));
//   registry.remove(id);                                    // the transport saw it close
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "natsfleet/relay.h"

namespace natsfleet::relay {

// The session interface and its id are public (natsfleet/relay.h): services with a WebSocket
// server of their own attach its sessions through natsfleet::Relay.
using RelaySession = natsfleet::RelaySession;
using SessionId = natsfleet::SessionId;

struct RegistryStats {
  std::size_t members = 0;       // members with at least one session registered
  std::size_t sessions = 0;      // sessions registered
  std::uint64_t delivered = 0;   // statuses handed to a session (one status to 3 sessions: 3)
  std::uint64_t dropped = 0;     // statuses a session refused (closed, or its queue full)
  std::uint64_t unrouted = 0;    // statuses for a member with no session here (normal in a fleet)
  std::uint64_t superseded = 0;  // not delivered: older than the member's status already taken
};

// Thread-safe. Sessions are held by shared_ptr until removed or pruned.
class SessionRegistry {
 public:
  // Remembers the last status of up to `remembered_members` members (least recently updated
  // forgotten first) and hands it to each new session of that member: a page opened after its
  // status was published shows it instead of waiting for the next one. 0: remember nothing.
  explicit SessionRegistry(std::size_t remembered_members = 10000);
  SessionRegistry(const SessionRegistry&) = delete;
  SessionRegistry& operator=(const SessionRegistry&) = delete;

  // Registers `session` under `member` and hands it the member's last status, if one is
  // remembered; the id removes it again. Ids are never reused.
  SessionId add(const std::string& member, std::shared_ptr<RelaySession> session);

  // Forgets the session; false when it was not (or no longer) registered, e.g. already pruned.
  bool remove(SessionId id);

  // Hands `payload` to every open session of `member` and returns how many took it. Sessions found
  // closed are pruned. Never blocks on a client: the work per session is a queue push. A null
  // payload reaches nobody.
  //
  // `event` orders a member's statuses (the stream sequence of the event each reports; 0: none):
  // a status whose event is not newer than the remembered one's is superseded, neither delivered
  // nor remembered, so a session never goes back to an older status and a new one is handed the
  // newest. Deliveries are serialized: every session sees a member's statuses in one order.
  std::size_t deliver(std::string_view member, const std::shared_ptr<const std::string>& payload,
                      std::uint64_t event = 0);

  // Sessions registered for `member` (closed ones count until pruned).
  std::size_t sessions(std::string_view member) const;

  RegistryStats stats() const;

 private:
  // Under mu_: false when `event` is superseded; else records the member's last status.
  bool remember(std::string_view member, const std::shared_ptr<const std::string>& payload,
                std::uint64_t event);

  struct Entry {
    SessionId id;
    std::shared_ptr<RelaySession> session;
  };

  std::mutex deliver_mu_;  // held for a whole deliver(), taken before mu_
  mutable std::mutex mu_;
  std::map<std::string, std::vector<Entry>, std::less<>> by_member_;
  std::unordered_map<SessionId, std::string> member_of_;
  SessionId next_id_ = 1;
  std::size_t sessions_ = 0;
  // The last status per member, most recently updated at the back of `recency_`.
  struct Last {
    std::shared_ptr<const std::string> payload;
    std::uint64_t event = 0;  // of `payload` (0: unordered)
    std::list<std::string>::iterator recency;
  };
  const std::size_t remembered_members_;
  std::unordered_map<std::string, Last> last_;
  std::list<std::string> recency_;
  std::uint64_t delivered_ = 0;
  std::uint64_t dropped_ = 0;
  std::uint64_t unrouted_ = 0;
  std::uint64_t superseded_ = 0;
};

}  // namespace natsfleet::relay
