// Who owns each partition of an ordered work. One lease per partition in a LeaseStore, written
// only by compare-and-set on its last revision; the revision that took a lease is the owner's
// epoch (it rises with every take, across the store). The rules, all on this replica's own
// monotonic clock (nothing depends on clocks agreeing between hosts):
//   - watched time: what "seen unchanged for a lease" counts is this replica's time between
//     two rounds whose membership write the store took; while the store does not answer, nobody
//     can renew, so that time says nothing of a writer and does not count. It runs no faster
//     than the monotonic clock, so a taker never waits less than a lease;
//   - members: each replica writes `members.<id>` every round; a member is live while its
//     revision was seen to change (or first seen) less than a lease of watched time ago;
//   - assignment: each partition goes to the live member with the highest rendezvous hash of
//     (member, partition), so a member that comes or goes moves only its share;
//   - take: a partition assigned here is taken when its lease is absent or released; a lapsed
//     one (held by a revision this replica has seen unchanged for a whole lease time, or by a
//     member whose key it has seen unchanged that long: the owner stopped renewing and, its last
//     write sent before it was seen, stopped acting a margin before that) when it is assigned
//     here among the members live for `settle` (all live ones when none has been), so a member
//     that joins and goes again holds up no lapsed partition;
//   - renew: the owner rewrites its lease every round with its progress (every message of the
//     partition at or below the checkpoint is done; the consumer it reads through); a renewal
//     refused for its revision means another replica took the lease: the partition is lost at once;
//   - act: an owner starts a handler only while may_act(): less than lease - margin since the
//     last renewal of the lease, and of its membership, that succeeded was sent, so it stops
//     before any taker can begin;
//   - hand over: an owner whose partition is assigned to another member, live for `settle` at
//     least (so a member that flaps moves nothing to and fro), is told to release it; it stops
//     reading, lets its handlers finish, then release() commits the checkpoint and marks the
//     lease released, which the new owner takes at once.
//
//   PartitionLeases leases(store, {.me = id, .partitions = 16});
//   auto changes = leases.round([&](int p) { return progress(p); });  // a few times a lease
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fleet/ordered/lease_store.h"

namespace natsfleet::fleet {

// What an owner commits with its lease: every message of the partition at or below `checkpoint`
// is done, and `reader` names the consumer it reads through (empty: none), which the next owner
// may adopt instead of making one.
struct Progress {
  uint64_t checkpoint = 0;
  std::string reader;
};

// A lease as written in the store: "<owner> <epoch> <checkpoint> held|released [<reader>]".
struct LeaseValue {
  std::string owner;
  uint64_t epoch = 0;  // 0 in the write that takes it: the epoch is that write's revision
  uint64_t checkpoint = 0;
  bool released = false;
  std::string reader;

  std::string encode() const;
  static std::optional<LeaseValue> decode(const std::string& text);
};

class PartitionLeases {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::string me;  // this replica's member id: unique per process
    int partitions = 16;
    std::chrono::milliseconds lease{5000};
    // Left of a lease when its owner stops starting handlers: covers the time a renewal takes
    // and clock rates that differ a little.
    std::chrono::milliseconds margin{1000};
    // A member key unchanged this long is removed (a replica that died without leaving).
    std::chrono::milliseconds forget_member_after{60000};
    // An owner hands a partition to a member only once that member has been live this long
    // (watched time); free partitions go to any live member at once.
    std::chrono::milliseconds settle{10000};
  };
  // A partition owned here.
  struct Owned {
    uint64_t epoch = 0;
    uint64_t revision = 0;  // of the lease's last write here
    uint64_t checkpoint = 0;
    std::string reader;               // the consumer named by the lease's last write
    Clock::time_point valid_until{};  // starts no handler from then on
    bool first = false;  // no lease was ever seen or written: the partition's first owner
  };
  // What a round changed.
  struct Changes {
    std::vector<int> taken;       // owned from now on (see owned())
    std::vector<int> lost;        // another replica holds the lease: stop at once
    std::vector<int> to_release;  // assigned elsewhere: drain, then release()
    // Taken again after the store lost the lease (it read absent after a value was seen): the
    // last checkpoint seen here came with it. A lease key is never removed.
    std::vector<int> vanished;
    std::optional<Error> error;  // the store did not answer (the round did what it could)
  };

  PartitionLeases(LeaseStore& store, Options options,
                  std::function<Clock::time_point()> now = &Clock::now);

  // One round: membership, then each partition's lease. `progress(p)` is committed with the
  // renewal of a partition owned here. Called from one thread.
  Changes round(const std::function<Progress(int)>& progress);
  // Commits `progress` and marks the lease released; the partition is no longer owned here.
  Result<void> release(int partition, const Progress& progress);
  // The round under way, if any, makes no further store call (any thread); later rounds neither.
  // leave() is not affected.
  void cut_short() { cut_short_ = true; }
  // Gives up every partition's lease as released (with its progress) and the membership, one
  // call at a time until `deadline` (on this object's clock); what is left then lapses after a
  // lease, as a stopped owner's would.
  void leave(const std::function<Progress(int)>& progress,
             Clock::time_point deadline = Clock::time_point::max());

  // Whether a handler of `partition` may start now. Any thread.
  bool may_act(int partition) const;
  std::optional<Owned> owned(int partition) const;
  std::vector<int> owned_partitions() const;
  // The live members as last seen (this replica included).
  std::vector<std::string> members() const;
  // The member the partition is assigned to among `members` (rendezvous hashing).
  static std::string assignee(const std::vector<std::string>& members, int partition);

 private:
  // The revision of a key as this replica saw it, and since when (watched time).
  struct Seen {
    uint64_t revision = 0;
    Clock::duration since{};
  };
  Result<std::vector<std::string>> refresh_members(Clock::time_point now);
  void judge(int partition, const std::vector<std::string>& live,
             const std::function<Progress(int)>& progress, Changes& changes);
  // `lease`: the value read, or the last one seen of a lease that vanished.
  void take(int partition, const std::optional<StoredValue>& current,
            const std::optional<LeaseValue>& lease, Changes& changes);
  void renew(int partition, const Progress& progress, Changes& changes);
  void note(const std::string& key, uint64_t revision);
  // Another member whose key this replica has seen unchanged for a whole lease.
  bool member_silent(const std::string& member) const;
  // Of `live`, this replica and the members live for `settle` at least.
  std::vector<std::string> settled(const std::vector<std::string>& live) const;
  // Of `live`, the members (this replica judged alike) live for `settle` at least; all of `live`
  // when none has been.
  std::vector<std::string> seasoned(const std::vector<std::string>& live) const;

  LeaseStore& store_;
  const Options options_;
  const std::function<Clock::time_point()> now_;
  // round() only.
  std::map<std::string, Seen> seen_;
  Clock::duration watched_{};
  std::map<std::string, Clock::duration> live_since_;  // other members, while live
  std::optional<Clock::time_point> answered_at_;  // the last round the store answered, if this one
  std::map<int, LeaseValue> last_seen_;           // each lease's last value read or written here

  mutable std::mutex mu_;
  std::atomic<bool> cut_short_{false};
  std::map<int, Owned> owned_;
  std::vector<std::string> members_;
  Clock::time_point member_valid_until_{};  // from this replica's last membership write
};

// The key of partition p's lease, and of a member's presence.
std::string lease_key(int partition);
std::string member_key(const std::string& member);

}  // namespace natsfleet::fleet
