#include "fleet/ordered/lease_store.h"

#include "nats/jetstream_api.h"

namespace natsfleet::fleet {
namespace {

// A key removed with `nats kv del` or `purge` keeps a marker message: the key is absent.
bool is_removal(const nats::StoredMessage& m) {
  const auto it = m.headers.find("KV-Operation");
  return it != m.headers.end() && !it->second.empty() &&
         (it->second.front() == "DEL" || it->second.front() == "PURGE");
}

}  // namespace

std::string lease_bucket(const std::string& work) { return "natsfleet-" + work; }

StreamLeaseStore::StreamLeaseStore(nats::JetStreamApi& api, std::string bucket, int replicas)
    : api_(api),
      bucket_(std::move(bucket)),
      stream_("KV_" + bucket_),
      prefix_("$KV." + bucket_ + "."),
      replicas_(replicas) {}

Result<void> StreamLeaseStore::ensure() {
  auto info = api_.stream_info(stream_);
  if (info) return {};
  if (!info.error().is_stream_not_found()) return info.error();
  nats::StreamConfig config;
  config.name = stream_;
  config.subjects = {prefix_ + ">"};
  config.num_replicas = replicas_;
  config.max_msgs_per_subject = 1;
  auto made = api_.create_stream(config);
  if (made) return {};
  // Another replica made it first.
  if (api_.stream_info(stream_)) return {};
  return made.error();
}

Result<std::optional<StoredValue>> StreamLeaseStore::get(const std::string& key) {
  auto m = api_.last_message(stream_, subject(key));
  if (!m) {
    if (m.error().is_jetstream(nats::kJsNoMessageFound)) return std::optional<StoredValue>();
    return m.error();
  }
  if (is_removal(*m)) return std::optional<StoredValue>();
  return std::optional<StoredValue>(StoredValue{m->seq, std::move(m->data)});
}

Result<uint64_t> StreamLeaseStore::put_if(const std::string& key, const std::string& value,
                                          uint64_t expected) {
  // A removal marker is the key's last message: writing over it needs its sequence.
  if (expected == 0) {
    auto m = api_.last_message(stream_, subject(key));
    if (m && is_removal(*m)) expected = m->seq;
  }
  const Headers headers{{"Nats-Expected-Last-Subject-Sequence", {std::to_string(expected)}}};
  auto ack = api_.publish(subject(key), value, headers);
  if (!ack) return ack.error();
  return ack->seq;
}

Result<uint64_t> StreamLeaseStore::put(const std::string& key, const std::string& value) {
  auto ack = api_.publish(subject(key), value, {});
  if (!ack) return ack.error();
  return ack->seq;
}

Result<void> StreamLeaseStore::remove(const std::string& key) {
  auto purged = api_.purge_subject(stream_, subject(key));
  if (!purged) return purged.error();
  return {};
}

Result<std::vector<std::string>> StreamLeaseStore::keys(const std::string& prefix) {
  auto subjects = api_.subjects(stream_, subject(prefix) + ">");
  if (!subjects) return subjects.error();
  std::vector<std::string> keys;
  for (auto& s : *subjects) keys.push_back(s.substr(prefix_.size()));
  return keys;
}

}  // namespace natsfleet::fleet
