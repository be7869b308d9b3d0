// Judges a chaos run's history: what the broker acknowledged must have been handled (or set
// aside as a dead letter), duplicates are counted and blamed on the faults around them, and no
// message may wait longer than the stall bound while some replica was ready to take it.
//
//   Verdict v = check(read_history(dir), CheckOptions{...});
//   std::cout << report(v);  return v.pass ? 0 : 1;
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chaos/history.h"

namespace natsfleet::chaos {

struct CheckOptions {
  // The longest a message may wait, counting only time when at least one replica was ready.
  double stall_bound_ms = 0;
  // A duplicate handled during a fault or within this long after it ended is blamed on it (on
  // the one whose end is nearest, when several are).
  double blame_window_ms = 0;
  // Self-test: before checking, forget one record of a message handled exactly once, as a sink
  // that acked without writing would. A checker that then does not report it lost is broken.
  bool drop_one_record = false;
  // Per-key order within one replica's file is exact. Across files a record is placed in its
  // window: written after the last read of its file that did not hold it (absent_ms) and by the
  // read that found it (at_ms), both measured, so two records are ordered only where their
  // windows do not overlap and no fixed tolerance is assumed. (The run reads the files every
  // 5 ms, so a window is 5 ms plus whatever the observer thread is late by.) This tolerance stands
  // in for the window only for records that carry none (absent_ms -1: histories recorded before it
  // was kept, or made by hand): such a record counts as written within this long before at_ms.
  double order_tolerance_ms = 0;
  // Self-test: swap the first two records of one key from one owner's term, as an owner handling
  // a key's older message after a newer one would. A checker that then finds no violation (within
  // one term) is broken.
  bool swap_one_key = false;
};

struct Verdict {
  size_t published = 0;        // publish calls made
  size_t acked = 0;            // acknowledged by the stream
  size_t handled = 0;          // distinct messages in some sink file
  size_t handled_unacked = 0;  // handled although the publisher never saw the ack
  size_t lost = 0;             // acked, never handled, not dead-lettered, still in the stream
  size_t broker_lost = 0;      // acked, and the stream no longer holds it (see History)
  std::vector<int64_t> broker_lost_ids;  // the first few
  std::vector<int64_t> lost_ids;         // the first few
  size_t unknown = 0;                    // records of ids nobody published: must be 0
  size_t dead_lettered = 0;
  size_t duplicates = 0;    // handlings beyond the first
  size_t stored_twice = 0;  // of them: at another stream sequence (the broker stored it twice)
  size_t duplicated_messages = 0;                     // messages handled more than once
  double duplicate_rate = 0;                          // duplicates / handled
  std::map<std::string, size_t> duplicates_by_fault;  // "none" when no fault was near
  std::map<std::string, size_t> faults_by_kind;
  double longest_stall_ms = 0;
  int64_t longest_stall_id = -1;
  size_t stalls_over_bound = 0;
  double stall_bound_ms = 0;
  int64_t self_test_dropped = -1;  // the id whose record the self-test removed
  size_t unreadable_lines = 0;
  // Per-key ordered runs only: a key's message handled after a later message of that key, as the
  // records were observed (the raw view).
  bool ordered = false;
  size_t order_violations = 0;
  // Of them: both records from one owner's term (the same partition and epoch): must be 0. The
  // others cross a change of owner, where a replay or a late write is expected and fenced.
  size_t order_violations_same_epoch = 0;
  std::vector<std::string> order_violation_examples;  // the first few
  // Violations where a record carries another stream sequence than its publish ack gave: the
  // stream's history was rewritten under the consumer after a failover (the same failovers lose
  // acknowledged messages: broker_lost). Counted and shown, not natsfleet's to keep in order.
  size_t order_violations_rewritten = 0;
  std::vector<std::string> order_violation_rewritten_examples;
  // Pairs of records of one key, of two messages and two replicas, whose order could not be told
  // (their windows overlap): not judged either way.
  size_t order_undecided = 0;
  double window_median_ms = 0;  // of the records' windows (at_ms - absent_ms), where kept
  double window_max_ms = 0;
  // The fencing view: every record replayed, in the order observed, through the rule a fencing
  // downstream applies (a key's write is ignored unless its stream sequence is above the last
  // one applied for that key).
  size_t fenced = 0;              // writes it would have ignored: counted, not a failure
  size_t fenced_repeats = 0;      // of them: the key's applied stream sequence again
  size_t fenced_late = 0;         // of them: an older sequence (a late write)
  size_t fenced_stale_epoch = 0;  // of them: an epoch below the newest seen for the partition
  // Keys whose applied value at the end is not their newest handled message: must be 0.
  size_t fenced_final_wrong = 0;
  std::vector<std::string> fenced_final_wrong_examples;
  // The same in a run where the broker lost acknowledged messages, when the applied record or one
  // of the newest message carries another stream sequence than its publish ack named (the broker
  // rewrote the stream's history under the consumer): counted apart.
  size_t fenced_final_wrong_rewritten = 0;
  std::vector<std::string> fenced_final_wrong_rewritten_examples;
  // Records of ordered work without a partition and epoch, or whose key was read from another
  // partition before: must be 0.
  size_t bad_fencing_tokens = 0;
  bool pass = false;
};

Verdict check(History history, const CheckOptions& options);

// The lines a person reads at the end of a run.
std::string report(const Verdict& verdict);
nlohmann::json to_json(const Verdict& verdict);

// Per second of the run: messages acked, first handlings, duplicates (for the timeline).
struct Second {
  size_t acked = 0;
  size_t handled = 0;
  size_t duplicates = 0;
};
std::vector<Second> per_second(const History& history);

}  // namespace natsfleet::chaos
