#include "chaos/checker.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <unordered_map>

namespace natsfleet::chaos {
namespace {

struct Span {
  double from = 0;
  double to = 0;
};

// When at least one replica answered ready: each replica's samples hold until its next sample
// (or the end of the run), and the spans of all replicas are merged.
std::vector<Span> ready_spans(const History& h) {
  std::vector<Span> spans;
  std::map<int, std::vector<ReadySample>> by_replica;
  for (const auto& s : h.readiness) by_replica[s.replica].push_back(s);
  for (auto& [replica, samples] : by_replica) {
    std::sort(samples.begin(), samples.end(),
              [](const ReadySample& a, const ReadySample& b) { return a.at_ms < b.at_ms; });
    for (size_t i = 0; i < samples.size(); ++i) {
      if (!samples[i].ready) continue;
      const double to = i + 1 < samples.size() ? samples[i + 1].at_ms : h.end_ms;
      spans.push_back({samples[i].at_ms, to});
    }
  }
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.from < b.from; });
  std::vector<Span> merged;
  for (const auto& s : spans) {
    if (!merged.empty() && s.from <= merged.back().to) {
      merged.back().to = std::max(merged.back().to, s.to);
    } else {
      merged.push_back(s);
    }
  }
  return merged;
}

// How much of [from, to] the spans cover.
double covered(const std::vector<Span>& spans, double from, double to) {
  double total = 0;
  auto it = std::upper_bound(spans.begin(), spans.end(), from,
                             [](double t, const Span& s) { return t < s.to; });
  for (; it != spans.end() && it->from < to; ++it)
    total += std::min(to, it->to) - std::max(from, it->from);
  return total;
}

}  // namespace

// Whether a record carries another stream sequence than its publish ack named: the broker
// rewrote the stream's history under the consumer.
class Renumbered {
 public:
  explicit Renumbered(const History& h) {
    for (const auto& p : h.publishes)
      if (p.acked && p.seq > 0) acked_seq_[p.id] = p.seq;
  }
  bool operator()(const HandlingRecord& r) const {
    auto it = acked_seq_.find(r.id);
    return it != acked_seq_.end() && it->second != r.seq;
  }

 private:
  std::unordered_map<int64_t, uint64_t> acked_seq_;
};

std::string describe(const HandlingRecord& r) {
  std::string out = std::to_string(r.id) + " (seq " + std::to_string(r.seq) + ", r" +
                    std::to_string(r.replica + 1);
  if (r.partition && r.epoch)
    out += ", p" + std::to_string(*r.partition) + " epoch " + std::to_string(*r.epoch);
  return out + ")";
}

// Both records come from one owner's term of their partition (a record without a token counts
// as one: nothing shows a change of owner between them).
bool same_term(const HandlingRecord& a, const HandlingRecord& b) {
  if (!a.partition || !a.epoch || !b.partition || !b.epoch) return true;
  return a.partition == b.partition && a.epoch == b.epoch;
}

// The earliest a record can have been written: after the last read of its file without it.
double written_after(const HandlingRecord& r, const CheckOptions& options) {
  return r.absent_ms >= 0 ? r.absent_ms : r.at_ms - options.order_tolerance_ms;
}

// Per key, in the order records were seen: a record of a message published before one already
// handled for its key is a violation (ids are the publish order: the broker may store one id
// twice, at two sequences, and that is a duplicate, not a reordering) (a repeat of the key's latest
// message is at-least-once, not a violation). "Already" is exact within one replica's file; across
// replicas a record counts as earlier only when it was seen before the other could have been
// written (see CheckOptions::order_tolerance_ms).
// A violation where either record was delivered under another stream sequence than its publish
// ack named is counted apart: the broker rewrote the stream's history under the consumer. Of the
// others, those across a change of owner are expected (a new owner replays what the old one
// handled but had not checkpointed; an owner paused past its lease writes late, which only the
// receiver can refuse: the fencing view); those within one owner's term must not happen.
void check_key_order(History& h, const CheckOptions& options, Verdict& v) {
  v.ordered = true;
  const Renumbered renumbered(h);
  std::unordered_map<int64_t, std::vector<size_t>> by_key;  // indexes into h.handlings
  if (options.swap_one_key) {
    std::unordered_map<int64_t, size_t> first_of_key;
    for (size_t i = 0; i < h.handlings.size(); ++i) {
      const int64_t key = h.handlings[i].id % h.keys;
      auto [it, fresh] = first_of_key.emplace(key, i);
      const HandlingRecord& first = h.handlings[it->second];
      if (fresh || first.seq == h.handlings[i].seq || !same_term(first, h.handlings[i])) continue;
      std::swap(h.handlings[it->second].seq, h.handlings[i].seq);
      std::swap(h.handlings[it->second].id, h.handlings[i].id);
      break;
    }
  }
  for (size_t i = 0; i < h.handlings.size(); ++i) by_key[h.handlings[i].id % h.keys].push_back(i);
  for (const auto& [key, records] : by_key) {
    for (size_t j = 0; j < records.size(); ++j) {
      const HandlingRecord& r = h.handlings[records[j]];
      bool violated = false;
      for (size_t i = 0; i < j; ++i) {
        const HandlingRecord& q = h.handlings[records[i]];
        // q was seen first; it was also written first unless r's window reaches back past it.
        const bool earlier = q.replica == r.replica || q.at_ms <= written_after(r, options);
        if (!earlier && q.id != r.id) ++v.order_undecided;
        if (violated || !earlier || q.id <= r.id) continue;
        violated = true;
        const bool rewritten = renumbered(q) || renumbered(r);
        auto& count = rewritten ? v.order_violations_rewritten : v.order_violations;
        auto& examples =
            rewritten ? v.order_violation_rewritten_examples : v.order_violation_examples;
        ++count;
        if (!rewritten && same_term(q, r)) ++v.order_violations_same_epoch;
        if (examples.size() < 10)
          examples.push_back("key " + std::to_string(key) + ": message " + describe(r) +
                             " handled after " + describe(q));
      }
    }
  }
  std::vector<double> windows;
  for (const auto& r : h.handlings)
    if (r.absent_ms >= 0) windows.push_back(r.at_ms - r.absent_ms);
  if (!windows.empty()) {
    std::sort(windows.begin(), windows.end());
    v.window_median_ms = windows[windows.size() / 2];
    v.window_max_ms = windows.back();
  }
}

// The fencing view: what a downstream that applies the fencing rule holds. Its final value for a
// key does not depend on the order writes arrive in (the highest stream sequence wins), so what
// it checks is the token itself: a key's newest message must carry its highest sequence.
// A wrong final value is blamed on the broker only in a run where it lost acknowledged messages
// (the failovers that rewrite a stream's history under the consumer do), and only when a record
// involved carries another stream sequence than its publish ack named.
void check_fencing(const History& h, bool broker_lost_messages, Verdict& v) {
  const Renumbered renumbered(h);
  struct KeyState {
    const HandlingRecord* applied = nullptr;
    int64_t newest = -1;             // the newest message handled
    bool newest_renumbered = false;  // some record of it carries a rewritten sequence
    std::optional<int> partition;
  };
  std::map<int64_t, KeyState> keys;                // by key, so examples come in key order
  std::unordered_map<int, uint64_t> newest_epoch;  // by partition, as observed so far
  for (const auto& r : h.handlings) {
    KeyState& k = keys[r.id % h.keys];
    if (!r.partition || !r.epoch || (k.partition && k.partition != r.partition)) {
      ++v.bad_fencing_tokens;
    } else if (!k.partition) {
      k.partition = r.partition;
    }
    bool stale = false;
    if (r.partition && r.epoch) {
      uint64_t& newest = newest_epoch[*r.partition];
      stale = *r.epoch < newest;
      newest = std::max(newest, *r.epoch);
    }
    if (r.id > k.newest) {
      k.newest = r.id;
      k.newest_renumbered = renumbered(r);
    } else if (r.id == k.newest) {
      k.newest_renumbered = k.newest_renumbered || renumbered(r);
    }
    if (k.applied && r.seq <= k.applied->seq) {
      ++v.fenced;
      ++(r.seq == k.applied->seq ? v.fenced_repeats : v.fenced_late);
      if (stale) ++v.fenced_stale_epoch;
      continue;
    }
    k.applied = &r;
  }
  for (const auto& [key, k] : keys) {
    if (!k.applied || k.applied->id == k.newest) continue;
    const bool rewritten = broker_lost_messages && (k.newest_renumbered || renumbered(*k.applied));
    auto& count = rewritten ? v.fenced_final_wrong_rewritten : v.fenced_final_wrong;
    auto& examples =
        rewritten ? v.fenced_final_wrong_rewritten_examples : v.fenced_final_wrong_examples;
    ++count;
    if (examples.size() < 10)
      examples.push_back("key " + std::to_string(key) + ": holds message " + describe(*k.applied) +
                         ", its newest handled message is " + std::to_string(k.newest));
  }
}

Verdict check(History h, const CheckOptions& options) {
  Verdict v;
  v.stall_bound_ms = options.stall_bound_ms;
  v.unreadable_lines = h.unreadable_lines;
  // Stable: records one poll read from one file keep that file's order.
  std::stable_sort(
      h.handlings.begin(), h.handlings.end(),
      [](const HandlingRecord& a, const HandlingRecord& b) { return a.at_ms < b.at_ms; });
  if (h.keys > 0) check_key_order(h, options, v);

  std::unordered_map<int64_t, size_t> count;
  for (const auto& r : h.handlings) ++count[r.id];
  if (options.drop_one_record) {
    auto victim = std::find_if(h.handlings.begin(), h.handlings.end(),
                               [&](const HandlingRecord& r) { return count[r.id] == 1; });
    if (victim != h.handlings.end()) {
      v.self_test_dropped = victim->id;
      count.erase(victim->id);
      h.handlings.erase(victim);
    }
  }

  std::unordered_map<int64_t, const PublishRecord*> published;
  for (const auto& p : h.publishes) published[p.id] = &p;
  std::unordered_map<int64_t, bool> dead;
  for (int64_t id : h.dead_lettered) dead[id] = true;
  std::unordered_map<int64_t, bool> broker_lost;
  for (int64_t id : h.broker_lost) broker_lost[id] = true;
  // The stream's own answer is not the last word: its replicas can disagree, and the consumer may
  // deliver another message at the sequence the ack named than the stream leader reads back.
  // Either way the acknowledged message was not there to be delivered.
  std::unordered_map<uint64_t, std::vector<int64_t>> handled_at;
  for (const auto& r : h.handlings) handled_at[r.seq].push_back(r.id);
  auto delivered_as_another = [&](const PublishRecord& p) {
    auto it = handled_at.find(p.seq);
    if (it == handled_at.end()) return false;
    return std::find(it->second.begin(), it->second.end(), p.id) == it->second.end();
  };
  v.dead_lettered = dead.size();
  v.published = h.publishes.size();

  for (const auto& f : h.faults) ++v.faults_by_kind[f.kind];

  // First handling of each id, and every later one is a duplicate blamed on nearby faults.
  std::unordered_map<int64_t, double> first;
  std::unordered_map<int64_t, uint64_t> first_seq;
  for (const auto& r : h.handlings) {
    if (!published.count(r.id)) {
      ++v.unknown;
      continue;
    }
    auto [it, inserted] = first.emplace(r.id, r.at_ms);
    if (inserted) {
      first_seq[r.id] = r.seq;
      continue;
    }
    ++v.duplicates;
    if (r.seq != first_seq[r.id]) ++v.stored_twice;
    // Faults overlap; a duplicate is blamed on one: of those in force or recently ended, the one
    // whose end is nearest (a replica resuming, a link healing, a node coming back).
    const FaultRecord* blamed = nullptr;
    double nearest = 0;
    for (const auto& f : h.faults) {
      if (r.at_ms < f.start_ms || r.at_ms > f.end_ms + options.blame_window_ms) continue;
      const double distance = std::abs(r.at_ms - f.end_ms);
      if (!blamed || distance < nearest) {
        blamed = &f;
        nearest = distance;
      }
    }
    ++v.duplicates_by_fault[blamed ? blamed->kind : "none"];
  }
  for (const auto& [id, n] : count)
    if (n > 1 && published.count(id)) ++v.duplicated_messages;
  v.handled = first.size();
  v.duplicate_rate =
      v.handled ? static_cast<double>(v.duplicates) / static_cast<double>(v.handled) : 0;

  const auto spans = ready_spans(h);
  for (const auto& p : h.publishes) {
    const auto handled = first.find(p.id);
    if (!p.acked) {
      if (handled != first.end()) ++v.handled_unacked;
      continue;
    }
    ++v.acked;
    if (handled == first.end()) {
      if (dead.count(p.id)) continue;
      if (broker_lost.count(p.id) || delivered_as_another(p)) {
        ++v.broker_lost;
        if (v.broker_lost_ids.size() < 20) v.broker_lost_ids.push_back(p.id);
        continue;
      }
      ++v.lost;
      if (v.lost_ids.size() < 20) v.lost_ids.push_back(p.id);
      continue;
    }
    if (handled->second <= p.ack_ms) continue;
    const double waited = covered(spans, p.ack_ms, handled->second);
    if (waited > v.longest_stall_ms) {
      v.longest_stall_ms = waited;
      v.longest_stall_id = p.id;
    }
    if (waited > options.stall_bound_ms) ++v.stalls_over_bound;
  }
  if (h.keys > 0) check_fencing(h, v.broker_lost > 0, v);
  v.pass = v.lost == 0 && v.unknown == 0 && v.stalls_over_bound == 0 && v.acked > 0 &&
           v.order_violations_same_epoch == 0 && v.fenced_final_wrong == 0 &&
           v.bad_fencing_tokens == 0;
  return v;
}

std::string report(const Verdict& v) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(3);
  out << "published " << v.published << ", acknowledged " << v.acked << ", handled " << v.handled
      << " (" << v.handled_unacked << " of them unacknowledged publishes)\n";
  out << "lost " << v.lost;
  if (!v.lost_ids.empty()) {
    out << " (ids";
    for (auto id : v.lost_ids) out << ' ' << id;
    out << (v.lost > v.lost_ids.size() ? " ..." : "") << ")";
  }
  out << "\n";
  if (v.broker_lost) {
    out << "lost by the broker " << v.broker_lost
        << " (acknowledged, then not in the stream: its ack's sequence holds, or was delivered as,"
        << " another message;"
        << " ids";
    for (auto id : v.broker_lost_ids) out << ' ' << id;
    out << (v.broker_lost > v.broker_lost_ids.size() ? " ...)" : ")") << "\n";
  }
  out << "duplicates " << v.duplicates << " (" << v.duplicated_messages << " messages, rate "
      << v.duplicate_rate * 100 << " %";
  if (v.stored_twice) out << "; " << v.stored_twice << " of them stored twice by the broker";
  out << ")";
  if (!v.duplicates_by_fault.empty()) {
    out << " by fault:";
    for (const auto& [kind, n] : v.duplicates_by_fault) out << ' ' << kind << '=' << n;
    out << " (each blamed on the fault whose end is nearest)";
  }
  out << "\n";
  out << "dead-lettered " << v.dead_lettered << "\n";
  out.precision(0);
  out << "longest stall " << v.longest_stall_ms << " ms (message " << v.longest_stall_id
      << "), bound " << v.stall_bound_ms << " ms, over bound " << v.stalls_over_bound << "\n";
  out << "faults";
  size_t total = 0;
  for (const auto& [kind, n] : v.faults_by_kind) {
    out << ' ' << kind << '=' << n;
    total += n;
  }
  out << " (" << total << " in all)\n";
  if (v.ordered) {
    out << "per-key order violations " << v.order_violations << " ("
        << v.order_violations_same_epoch
        << " within one owner's term, must be 0; the others across a change of owner: a replay"
           " from the checkpoint or a deposed owner's late write, which a fencing sink ignores)\n";
    for (const auto& e : v.order_violation_examples) out << "  " << e << "\n";
    if (v.order_violations_rewritten) {
      out << "per-key order violations on a stream history the broker rewrote "
          << v.order_violations_rewritten
          << " (a record's stream sequence is not the one its publish ack named; not counted "
             "against natsfleet)\n";
      for (const auto& e : v.order_violation_rewritten_examples) out << "  " << e << "\n";
    }
    out.precision(1);
    out << "per-key order undecided " << v.order_undecided
        << " (pairs of two replicas' records of a key whose windows overlap, not ordered; a"
           " record's window, from the last read of its file without it to the read that found"
           " it: median "
        << v.window_median_ms << " ms, longest " << v.window_max_ms << " ms)\n";
    out << "fenced " << v.fenced << " (writes a fencing sink ignores: " << v.fenced_repeats
        << " repeats, " << v.fenced_late << " late writes of an older message; "
        << v.fenced_stale_epoch << " of them from a superseded epoch)\n";
    out << "fenced_final_wrong " << v.fenced_final_wrong
        << " (keys a fencing sink ends on another than their newest handled message)\n";
    for (const auto& e : v.fenced_final_wrong_examples) out << "  " << e << "\n";
    if (v.fenced_final_wrong_rewritten) {
      out << "fenced_final_wrong on a stream history the broker rewrote "
          << v.fenced_final_wrong_rewritten << " (not counted against natsfleet)\n";
      for (const auto& e : v.fenced_final_wrong_rewritten_examples) out << "  " << e << "\n";
    }
    if (v.bad_fencing_tokens)
      out << "records without a fencing token, or with another partition than their key's "
          << v.bad_fencing_tokens << "\n";
  }
  if (v.unknown) out << "records of unpublished messages " << v.unknown << "\n";
  if (v.unreadable_lines) out << "unreadable sink lines " << v.unreadable_lines << "\n";
  if (v.self_test_dropped >= 0)
    out << "self-test: the record of message " << v.self_test_dropped << " was dropped\n";
  out << (v.pass ? "PASS" : "FAIL") << "\n";
  return out.str();
}

nlohmann::json to_json(const Verdict& v) {
  return nlohmann::json{
      {"published", v.published},
      {"acknowledged", v.acked},
      {"handled", v.handled},
      {"handled_unacknowledged", v.handled_unacked},
      {"lost", v.lost},
      {"lost_ids", v.lost_ids},
      {"broker_lost", v.broker_lost},
      {"broker_lost_ids", v.broker_lost_ids},
      {"stored_twice", v.stored_twice},
      {"unknown_records", v.unknown},
      {"dead_lettered", v.dead_lettered},
      {"duplicates", v.duplicates},
      {"duplicated_messages", v.duplicated_messages},
      {"duplicate_rate", v.duplicate_rate},
      {"duplicates_by_fault", v.duplicates_by_fault},
      {"faults_by_kind", v.faults_by_kind},
      {"longest_stall_ms", v.longest_stall_ms},
      {"longest_stall_id", v.longest_stall_id},
      {"stalls_over_bound", v.stalls_over_bound},
      {"stall_bound_ms", v.stall_bound_ms},
      {"unreadable_sink_lines", v.unreadable_lines},
      {"self_test_dropped", v.self_test_dropped},
      {"ordered", v.ordered},
      {"order_violations", v.order_violations},
      {"order_violation_examples", v.order_violation_examples},
      {"order_violations_same_epoch", v.order_violations_same_epoch},
      {"order_violations_rewritten", v.order_violations_rewritten},
      {"order_violation_rewritten_examples", v.order_violation_rewritten_examples},
      {"order_undecided", v.order_undecided},
      {"window_median_ms", v.window_median_ms},
      {"window_max_ms", v.window_max_ms},
      {"fenced", v.fenced},
      {"fenced_repeats", v.fenced_repeats},
      {"fenced_late", v.fenced_late},
      {"fenced_stale_epoch", v.fenced_stale_epoch},
      {"fenced_final_wrong", v.fenced_final_wrong},
      {"fenced_final_wrong_examples", v.fenced_final_wrong_examples},
      {"fenced_final_wrong_rewritten", v.fenced_final_wrong_rewritten},
      {"fenced_final_wrong_rewritten_examples", v.fenced_final_wrong_rewritten_examples},
      {"bad_fencing_tokens", v.bad_fencing_tokens},
      {"pass", v.pass}};
}

std::vector<Second> per_second(const History& h) {
  std::vector<Second> out(static_cast<size_t>(h.end_ms / 1000) + 1);
  auto bin = [&](double ms) {
    return std::min(out.size() - 1, static_cast<size_t>(std::max(0.0, ms) / 1000));
  };
  for (const auto& p : h.publishes)
    if (p.acked) ++out[bin(p.ack_ms)].acked;
  std::vector<HandlingRecord> sorted = h.handlings;
  std::sort(sorted.begin(), sorted.end(),
            [](const HandlingRecord& a, const HandlingRecord& b) { return a.at_ms < b.at_ms; });
  std::unordered_map<int64_t, bool> seen;
  for (const auto& r : sorted) {
    if (seen.emplace(r.id, true).second) {
      ++out[bin(r.at_ms)].handled;
    } else {
      ++out[bin(r.at_ms)].duplicates;
    }
  }
  return out;
}

}  // namespace natsfleet::chaos
