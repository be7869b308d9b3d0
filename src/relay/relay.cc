#include "natsfleet/relay.h"

#include <atomic>
#include <cctype>
#include <deque>
#include <mutex>
#include <unordered_set>

#include "base/parse_number.h"
#include "relay/relay_internal.h"

namespace natsfleet {
namespace {

std::string upper(std::string text) {
  for (char& c : text)
    c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

// The header that carries a status's event order (Relay::publish's `event`).
constexpr const char* kEventHeader = "Natsfleet-Relay-Event";
// The broker stores a publish carrying it only if the subject's last sequence is the one named.
constexpr const char* kExpectedLastSubjectSequence = "Nats-Expected-Last-Subject-Sequence";

uint64_t event_of(const Message& m) {
  return base::parse_number<uint64_t>(m.header(kEventHeader)).value_or(0);
}

// The last `capacity` message ids, oldest forgotten first.
class RecentIds {
 public:
  explicit RecentIds(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}
  // False when `id` was seen already.
  bool remember(const std::string& id) {
    if (!seen_.insert(id).second) return false;
    order_.push_back(id);
    if (order_.size() > capacity_) {
      seen_.erase(order_.front());
      order_.pop_front();
    }
    return true;
  }

 private:
  const size_t capacity_;
  std::deque<std::string> order_;
  std::unordered_set<std::string> seen_;
};

// What the subscription's handler touches: shared with it, so a relay destroyed before its
// fleet has stopped leaves nothing dangling.
struct Inbound {
  explicit Inbound(size_t remembered_ids) : recent(remembered_ids) {}

  void deliver(const Message& m, size_t prefix_size) {
    received++;
    if (const std::string id = m.header("Nats-Msg-Id"); !id.empty()) {
      std::lock_guard lock(recent_mu);
      if (!recent.remember(id)) {
        duplicates++;
        return;
      }
    }
    const std::string& subject = m.subject();
    const std::string key = subject.substr(std::min(subject.size(), prefix_size + 1));
    registry.deliver(key, std::make_shared<const std::string>(m.data()), event_of(m));
  }

  relay::SessionRegistry registry;
  std::mutex recent_mu;
  RecentIds recent;
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> duplicates{0};
  std::atomic<uint64_t> superseded_at_publish{0};  // publish() found a newer event's stored
};

}  // namespace

Result<void> check_relay_key(std::string_view key) {
  auto refused = [](std::string why) {
    return Result<void>(Errc::invalid_argument, std::move(why));
  };
  if (key.empty()) return refused("relay key is empty");
  if (key.size() > 128) return refused("relay key is longer than 128 characters");
  for (char c : key)
    if (c == '.' || c == '*' || c == '>' || std::isspace(static_cast<unsigned char>(c)) ||
        std::iscntrl(static_cast<unsigned char>(c)))
      return refused("relay key '" + std::string(key) +
                     "' may not contain '.', '*', '>', spaces or control characters");
  return {};
}

class Relay::Impl {
 public:
  Impl(Fleet& fleet, RelayOptions options)
      : fleet_(fleet),
        options_(std::move(options)),
        inbound_(std::make_shared<Inbound>(options_.remembered_ids)) {
    if (options_.subject_prefix.empty())
      options_.subject_prefix = "natsfleet.relay." + options_.name;
    if (options_.stream.empty()) options_.stream = "RELAY_" + upper(options_.name);
  }

  Result<void> ensure_subscribed() {
    std::lock_guard lock(mu_);
    if (subscribed_) return {};
    BroadcastSpec spec{
        .name = options_.name,
        .subject = options_.subject_prefix + ".*",
        .source = options_.source,
        .heartbeat = options_.heartbeat,
    };
    if (options_.source == BroadcastSource::jetstream) {
      spec.stream = options_.stream;
      spec.create_stream = true;
      // Every key's last status first: nothing published before this replica subscribed is
      // missed, and a page opened later is handed it.
      spec.start_with_last_per_subject = true;
      spec.stream_max_age = options_.stream_max_age;
    }
    auto added =
        fleet_.add_broadcast(spec, [inbound = inbound_, prefix = options_.subject_prefix.size()](
                                       const Message& m) { inbound->deliver(m, prefix); });
    if (!added) return added.error();
    subscribed_ = true;
    return {};
  }

  Result<SessionId> attach(const std::string& key, std::shared_ptr<RelaySession> session) {
    if (auto checked = check_relay_key(key); !checked) return checked.error();
    if (!session) return Result<SessionId>(Errc::invalid_argument, "no session");
    const SessionId id = inbound_->registry.add(key, std::move(session));
    // Real traffic is the trigger: every attach makes sure the subscription exists.
    if (auto ensured = ensure_subscribed(); !ensured) {
      inbound_->registry.remove(id);
      return ensured.error();
    }
    return id;
  }

  void detach(SessionId id) { inbound_->registry.remove(id); }

  Result<void> publish(const std::string& key, const std::string& payload,
                       const std::string& msg_id, uint64_t event) {
    if (auto checked = check_relay_key(key); !checked) return checked;
    const std::string subject = options_.subject_prefix + "." + key;
    Headers headers;
    if (event != 0) headers[kEventHeader] = {std::to_string(event)};
    if (options_.source == BroadcastSource::core)
      return fleet_.publish(subject, payload, msg_id, headers);
    if (event == 0) {
      auto stored =
          fleet_.publish_to_stream(subject, payload, msg_id, options_.publish_timeout, headers);
      if (!stored) return stored.error();
      return {};
    }
    return publish_if_newest(subject, payload, msg_id, event, std::move(headers));
  }

  // Stores a status only while the newest the stream holds for its key is an older event's, so
  // the stream's last status per key (what a replica that subscribes later starts from) is the
  // newest event's. Between the read and the store another replica may store one: the store
  // then names the wrong last sequence, and the key is read again.
  Result<void> publish_if_newest(const std::string& subject, const std::string& payload,
                                 const std::string& msg_id, uint64_t event, Headers headers) {
    constexpr int kAttempts = 8;
    const auto deadline = std::chrono::steady_clock::now() + options_.publish_timeout;
    Error last_error{make_error_code(Errc::timeout), subject + ": no attempt to store it"};
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      auto newest = fleet_.last_stored(options_.stream, subject, left);
      if (!newest) return newest.error();
      if (*newest && event_of(**newest) >= event) {
        inbound_->superseded_at_publish++;
        return {};
      }
      headers[kExpectedLastSubjectSequence] = {
          std::to_string(*newest ? (*newest)->stream_seq() : 0)};
      auto stored = fleet_.publish_to_stream(subject, payload, msg_id, left, headers);
      if (stored) return {};
      if (!stored.error().is_jetstream(kJsWrongLastSequence)) return stored.error();
      last_error = stored.error();
    }
    return Error{last_error.code, subject + ": statuses of newer events kept being stored (" +
                                      last_error.describe() + ")"};
  }

  RelayStats stats() const {
    const auto registry = inbound_->registry.stats();
    RelayStats s;
    s.received = inbound_->received.load();
    s.duplicates = inbound_->duplicates.load();
    s.superseded_at_publish = inbound_->superseded_at_publish.load();
    s.delivered = registry.delivered;
    s.dropped = registry.dropped;
    s.unrouted = registry.unrouted;
    s.superseded = registry.superseded;
    s.keys = registry.members;
    s.sessions = registry.sessions;
    std::lock_guard lock(mu_);
    s.subscribed = subscribed_;
    return s;
  }

  relay::SessionRegistry& registry() { return inbound_->registry; }

 private:
  Fleet& fleet_;
  RelayOptions options_;
  std::shared_ptr<Inbound> inbound_;
  mutable std::mutex mu_;
  bool subscribed_ = false;
};

Relay::Relay(Fleet& fleet, RelayOptions options)
    : impl_(std::make_unique<Impl>(fleet, std::move(options))) {}
Relay::~Relay() = default;

Result<SessionId> Relay::attach(const std::string& key, std::shared_ptr<RelaySession> session) {
  return impl_->attach(key, std::move(session));
}
void Relay::detach(SessionId id) { impl_->detach(id); }
Result<void> Relay::ensure_subscribed() { return impl_->ensure_subscribed(); }
Result<void> Relay::publish(const std::string& key, const std::string& payload,
                            const std::string& msg_id, uint64_t event) {
  return impl_->publish(key, payload, msg_id, event);
}
RelayStats Relay::stats() const { return impl_->stats(); }

}  // namespace natsfleet

namespace natsfleet::relay {

SessionRegistry& registry_of(Relay::Impl& relay) { return relay.registry(); }

}  // namespace natsfleet::relay
