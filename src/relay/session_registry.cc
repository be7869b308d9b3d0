#include "relay/session_registry.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace natsfleet::relay {

SessionRegistry::SessionRegistry(std::size_t remembered_members)
    : remembered_members_(remembered_members) {}

SessionId SessionRegistry::add(const std::string& member, std::shared_ptr<RelaySession> session) {
  std::lock_guard lock(mu_);
  const SessionId id = next_id_++;
  // Under the lock, so a status delivered at the same moment cannot overtake it: deliver()
  // records the new last status and picks its targets in one step.
  if (auto last = last_.find(member); last != last_.end()) session->deliver(last->second.payload);
  auto it = by_member_.find(member);
  if (it == by_member_.end()) it = by_member_.emplace(member, std::vector<Entry>{}).first;
  it->second.push_back(Entry{id, std::move(session)});
  member_of_.emplace(id, member);
  ++sessions_;
  return id;
}

bool SessionRegistry::remove(SessionId id) {
  std::shared_ptr<RelaySession> released;  // destroyed after the lock is given up
  std::lock_guard lock(mu_);
  const auto owner = member_of_.find(id);
  if (owner == member_of_.end()) return false;
  const auto it = by_member_.find(owner->second);
  member_of_.erase(owner);
  if (it == by_member_.end()) return false;
  auto& entries = it->second;
  const auto entry =
      std::find_if(entries.begin(), entries.end(), [id](const Entry& e) { return e.id == id; });
  if (entry == entries.end()) return false;
  released = std::move(entry->session);
  entries.erase(entry);
  --sessions_;
  if (entries.empty()) by_member_.erase(it);
  return true;
}

std::size_t SessionRegistry::deliver(std::string_view member,
                                     const std::shared_ptr<const std::string>& payload,
                                     std::uint64_t event) {
  if (!payload) return 0;
  // One delivery at a time: two statuses of a member handed out at once could reach a session
  // in either order. A session removing itself from inside deliver() takes mu_ only.
  std::lock_guard serial(deliver_mu_);
  std::vector<std::shared_ptr<RelaySession>> targets;
  {
    std::lock_guard lock(mu_);
    if (!remember(member, payload, event)) {
      ++superseded_;
      return 0;
    }
    const auto it = by_member_.find(member);
    if (it == by_member_.end()) {
      ++unrouted_;
      return 0;
    }
    targets.reserve(it->second.size());
    for (const auto& entry : it->second) targets.push_back(entry.session);
  }

  // Outside the lock: a session may remove itself from inside deliver() (its queue overflowed).
  std::size_t reached = 0;
  for (const auto& session : targets) {
    if (!session->closed() && session->deliver(payload)) ++reached;
  }

  std::vector<std::shared_ptr<RelaySession>> pruned;  // destroyed after the lock is given up
  std::lock_guard lock(mu_);
  delivered_ += reached;
  dropped_ += targets.size() - reached;
  if (reached == targets.size()) return reached;
  const auto it = by_member_.find(member);
  if (it == by_member_.end()) return reached;
  auto& entries = it->second;
  for (auto e = entries.begin(); e != entries.end();) {
    if (e->session->closed()) {
      member_of_.erase(e->id);
      pruned.push_back(std::move(e->session));
      e = entries.erase(e);
      --sessions_;
    } else {
      ++e;
    }
  }
  if (entries.empty()) by_member_.erase(it);
  return reached;
}

bool SessionRegistry::remember(std::string_view member,
                               const std::shared_ptr<const std::string>& payload,
                               std::uint64_t event) {
  if (remembered_members_ == 0) return true;
  std::string key(member);
  if (auto it = last_.find(key); it != last_.end()) {
    if (event != 0 && it->second.event >= event) return false;
    it->second.payload = payload;
    it->second.event = event;
    recency_.splice(recency_.end(), recency_, it->second.recency);
    return true;
  }
  if (last_.size() >= remembered_members_) {
    last_.erase(recency_.front());
    recency_.pop_front();
  }
  recency_.push_back(key);
  last_.emplace(std::move(key), Last{payload, event, std::prev(recency_.end())});
  return true;
}

std::size_t SessionRegistry::sessions(std::string_view member) const {
  std::lock_guard lock(mu_);
  const auto it = by_member_.find(member);
  return it == by_member_.end() ? 0 : it->second.size();
}

RegistryStats SessionRegistry::stats() const {
  std::lock_guard lock(mu_);
  RegistryStats s;
  s.members = by_member_.size();
  s.sessions = sessions_;
  s.delivered = delivered_;
  s.dropped = dropped_;
  s.unrouted = unrouted_;
  s.superseded = superseded_;
  return s;
}

}  // namespace natsfleet::relay
