#include "fleet/ordered/partition_leases.h"

#include <algorithm>
#include <sstream>

#include "base/fnv_hash.h"

namespace natsfleet::fleet {
namespace {

constexpr std::string_view kMembers = "members.";

bool refused_for_revision(const Error& e) { return e.is_jetstream(kJsWrongLastSequence); }

// FNV-1a mixes its last bytes into the low bits only: ids that differ at their end would rank
// alike for every partition. A 64-bit finalizer spreads every input bit over the result.
uint64_t mixed(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

}  // namespace

std::string lease_key(int partition) { return "leases." + std::to_string(partition); }
std::string member_key(const std::string& member) { return std::string(kMembers) + member; }

std::string LeaseValue::encode() const {
  return owner + ' ' + std::to_string(epoch) + ' ' + std::to_string(checkpoint) + ' ' +
         (released ? "released" : "held") + (reader.empty() ? "" : ' ' + reader);
}

std::optional<LeaseValue> LeaseValue::decode(const std::string& text) {
  std::istringstream in(text);
  LeaseValue v;
  std::string state;
  if (!(in >> v.owner >> v.epoch >> v.checkpoint >> state)) return std::nullopt;
  if (state != "held" && state != "released") return std::nullopt;
  v.released = state == "released";
  in >> v.reader;  // absent in a lease written before readers were named
  return v;
}

PartitionLeases::PartitionLeases(LeaseStore& store, Options options,
                                 std::function<Clock::time_point()> now)
    : store_(store), options_(std::move(options)), now_(std::move(now)) {}

std::string PartitionLeases::assignee(const std::vector<std::string>& members, int partition) {
  std::string best;
  uint64_t best_score = 0;
  for (const auto& m : members) {
    const uint64_t score = mixed(base::fnv1a_64(std::to_string(partition) + '/' + m));
    if (best.empty() || score > best_score || (score == best_score && m > best)) {
      best = m;
      best_score = score;
    }
  }
  return best;
}

void PartitionLeases::note(const std::string& key, uint64_t revision) {
  auto [it, fresh] = seen_.try_emplace(key, Seen{revision, watched_});
  if (!fresh && it->second.revision != revision) it->second = Seen{revision, watched_};
}

Result<std::vector<std::string>> PartitionLeases::refresh_members(Clock::time_point now) {
  const Clock::time_point sent = now_();
  auto answered = [&](const auto& result) {
    if (!result) answered_at_.reset();
    return result.ok();
  };
  if (auto mine = store_.put(member_key(options_.me), options_.me); !answered(mine))
    return mine.error();
  {
    std::lock_guard lock(mu_);
    member_valid_until_ = sent + options_.lease - options_.margin;
  }
  if (answered_at_) watched_ += now - *answered_at_;
  answered_at_ = now;
  auto keys = store_.keys(std::string(kMembers));
  if (!answered(keys)) return keys.error();
  std::vector<std::string> live{options_.me};
  for (const auto& key : *keys) {
    const std::string member = key.substr(kMembers.size());
    if (member == options_.me) continue;
    auto value = store_.get(key);
    if (!answered(value)) return value.error();
    if (!*value) continue;
    note(key, (*value)->revision);
    const Seen& s = seen_[key];
    if (watched_ - s.since < options_.lease) {
      live.push_back(member);
      live_since_.try_emplace(member, watched_);
    } else if (watched_ - s.since >= options_.forget_member_after) {
      (void)store_.remove(key);  // it comes back with its next round if it lives after all
      seen_.erase(key);
    }
  }
  for (auto it = live_since_.begin(); it != live_since_.end();)
    it = std::find(live.begin(), live.end(), it->first) == live.end() ? live_since_.erase(it)
                                                                      : std::next(it);
  std::sort(live.begin(), live.end());
  return live;
}

std::vector<std::string> PartitionLeases::settled(const std::vector<std::string>& live) const {
  std::vector<std::string> out;
  for (const auto& m : live) {
    auto it = live_since_.find(m);
    if (m == options_.me || (it != live_since_.end() && watched_ - it->second >= options_.settle))
      out.push_back(m);
  }
  return out;
}

std::vector<std::string> PartitionLeases::seasoned(const std::vector<std::string>& live) const {
  std::vector<std::string> out = settled(live);
  if (watched_ < options_.settle) std::erase(out, options_.me);
  return out.empty() ? live : out;
}

PartitionLeases::Changes PartitionLeases::round(const std::function<Progress(int)>& progress) {
  Changes changes;
  if (cut_short_) return changes;
  const Clock::time_point now = now_();
  auto live = refresh_members(now);
  if (!live) {
    changes.error = live.error();
    // Leases owned here are still renewed: an unreadable membership must not cost them.
    for (int p : owned_partitions())
      if (!cut_short_) renew(p, progress(p), changes);
    return changes;
  }
  {
    std::lock_guard lock(mu_);
    members_ = *live;
  }
  for (int p = 0; p < options_.partitions && !cut_short_; ++p) judge(p, *live, progress, changes);
  return changes;
}

void PartitionLeases::judge(int partition, const std::vector<std::string>& live,
                            const std::function<Progress(int)>& progress, Changes& changes) {
  const bool mine = owned(partition).has_value();
  const bool assigned_here = assignee(live, partition) == options_.me;
  if (mine) {
    renew(partition, progress(partition), changes);
    // Handed to a member only once it has been live for `settle`: a member that flaps (its key
    // silent for a lease, then back) does not move partitions to and fro, each move a new
    // reader on the broker.
    if (assignee(settled(live), partition) != options_.me && owned(partition))
      changes.to_release.push_back(partition);
    return;
  }
  // A lapsed lease goes to a member that has been live for `settle`: a member that has just
  // joined and may go again (a crash loop, a pod killed twice) would hold it up for a lease each
  // time. A free one goes to its assignee among every live member at once.
  const bool lapsed_here = assignee(seasoned(live), partition) == options_.me;
  if (!assigned_here && !lapsed_here) return;
  auto current = store_.get(lease_key(partition));
  if (!current) {
    changes.error = current.error();
    return;
  }
  if (!*current) {
    // Nothing removes a lease key: one seen before and absent now was lost by the store. Its
    // last checkpoint seen here is done all the same, so the take keeps it.
    auto seen = last_seen_.find(partition);
    if (!assigned_here) return;
    if (seen == last_seen_.end()) return take(partition, std::nullopt, std::nullopt, changes);
    changes.vanished.push_back(partition);
    return take(partition, std::nullopt, seen->second, changes);
  }
  note(lease_key(partition), (*current)->revision);
  const auto lease = LeaseValue::decode((*current)->value);
  if (lease) last_seen_[partition] = *lease;
  // Its owner started its last write (a renewal of this lease, or of its membership, which it
  // needs as well to act) before this replica first saw it, and stops acting a margin before a
  // lease from then: a whole lease from first sight of either leaves that margin. An unreadable
  // lease is treated as held: it lapses like any other.
  const bool lapsed = watched_ - seen_[lease_key(partition)].since >= options_.lease ||
                      (lease && member_silent(lease->owner));
  if (lease && lease->released) {
    if (assigned_here) take(partition, *current, lease, changes);
  } else if (lapsed && lapsed_here) {
    take(partition, *current, lease, changes);
  }
}

void PartitionLeases::take(int partition, const std::optional<StoredValue>& current,
                           const std::optional<LeaseValue>& lease, Changes& changes) {
  LeaseValue mine{.owner = options_.me,
                  .epoch = 0,
                  .checkpoint = lease ? lease->checkpoint : 0,
                  .released = false,
                  .reader = lease ? lease->reader : std::string()};
  const Clock::time_point sent = now_();
  auto revision =
      store_.put_if(lease_key(partition), mine.encode(), current ? current->revision : uint64_t{0});
  if (!revision) {
    if (!refused_for_revision(revision.error())) changes.error = revision.error();
    return;  // another replica took it first, or the store did not answer
  }
  last_seen_[partition] = mine;
  std::lock_guard lock(mu_);
  owned_[partition] = Owned{.epoch = *revision,
                            .revision = *revision,
                            .checkpoint = mine.checkpoint,
                            .reader = mine.reader,
                            .valid_until = sent + options_.lease - options_.margin,
                            .first = !current && !lease};
  changes.taken.push_back(partition);
}

void PartitionLeases::renew(int partition, const Progress& progress, Changes& changes) {
  auto held = owned(partition);
  if (!held) return;
  const LeaseValue value{.owner = options_.me,
                         .epoch = held->epoch,
                         .checkpoint = std::max(progress.checkpoint, held->checkpoint),
                         .released = false,
                         .reader = progress.reader.empty() ? held->reader : progress.reader};
  const Clock::time_point sent = now_();
  auto revision = store_.put_if(lease_key(partition), value.encode(), held->revision);
  if (revision) last_seen_[partition] = value;
  std::lock_guard lock(mu_);
  auto it = owned_.find(partition);
  if (it == owned_.end()) return;
  if (revision) {
    it->second.revision = *revision;
    it->second.checkpoint = value.checkpoint;
    it->second.reader = value.reader;
    it->second.valid_until = sent + options_.lease - options_.margin;
  } else if (refused_for_revision(revision.error())) {
    owned_.erase(it);
    changes.lost.push_back(partition);
  } else {
    changes.error = revision.error();  // may_act() turns false when the lease may lapse
  }
}

Result<void> PartitionLeases::release(int partition, const Progress& progress) {
  auto held = owned(partition);
  if (!held) return {};
  {
    std::lock_guard lock(mu_);
    owned_.erase(partition);  // from now on nothing of it starts here, whatever the store says
  }
  const LeaseValue value{.owner = options_.me,
                         .epoch = held->epoch,
                         .checkpoint = std::max(progress.checkpoint, held->checkpoint),
                         .released = true,
                         .reader = progress.reader.empty() ? held->reader : progress.reader};
  auto revision = store_.put_if(lease_key(partition), value.encode(), held->revision);
  if (!revision) return revision.error();  // it lapses; the next owner takes it after a lease
  return {};
}

void PartitionLeases::leave(const std::function<Progress(int)>& progress,
                            Clock::time_point deadline) {
  for (int p : owned_partitions()) {
    if (now_() >= deadline) return;
    (void)release(p, progress(p));
  }
  if (now_() < deadline) (void)store_.remove(member_key(options_.me));
}

bool PartitionLeases::member_silent(const std::string& member) const {
  auto it = seen_.find(member_key(member));
  return member != options_.me && it != seen_.end() &&
         watched_ - it->second.since >= options_.lease;
}

bool PartitionLeases::may_act(int partition) const {
  const Clock::time_point now = now_();
  std::lock_guard lock(mu_);
  auto it = owned_.find(partition);
  return it != owned_.end() && now < it->second.valid_until && now < member_valid_until_;
}

std::optional<PartitionLeases::Owned> PartitionLeases::owned(int partition) const {
  std::lock_guard lock(mu_);
  auto it = owned_.find(partition);
  if (it == owned_.end()) return std::nullopt;
  return it->second;
}

std::vector<int> PartitionLeases::owned_partitions() const {
  std::lock_guard lock(mu_);
  std::vector<int> out;
  for (const auto& [p, _] : owned_) out.push_back(p);
  return out;
}

std::vector<std::string> PartitionLeases::members() const {
  std::lock_guard lock(mu_);
  return members_;
}

}  // namespace natsfleet::fleet
