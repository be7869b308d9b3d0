// One replica of the sync-status service: the incident's scenario, done right.
//
// Work: `daemon.sync.complete` ("a member's mailbox finished syncing") is shared work, handled by
// one replica. The handler computes the member's status once and publishes it through the relay.
// Telling the member: every replica relays every status to the browser sessions it holds, so a
// member's panel updates whichever replica handled the work and whichever one the browser is on.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace sync_status {

struct ReplicaOptions {
  std::string name = "replica";
  std::vector<std::string> servers;
  std::string host = "127.0.0.1";
  int port = 8080;  // the page and /ws; 0: any free port (printed)
  std::string web_root;
};

// Serves until `stop` becomes true; 0 on a clean stop, 70 when the fleet reported a fatal state.
int run_replica(const ReplicaOptions& options, const std::atomic<bool>& stop);

// The status a member's panel shows for one sync-complete event (the event's JSON payload:
// {"member":"alice","messages":42} or {"member":"alice","error":"IMAP login refused"}), or an
// error naming what is wrong with the payload. `event_seq`, the event's stream sequence, goes into
// the status as "event": two replicas may publish a member's statuses out of order, and the page
// keeps showing the newest event's.
struct Status {
  std::string member;
  std::string json;   // what the browser receives
  std::string error;  // non-empty: the payload was unusable
};
Status status_for(const std::string& payload, const std::string& replica, const std::string& now,
                  uint64_t event_seq);

}  // namespace sync_status
