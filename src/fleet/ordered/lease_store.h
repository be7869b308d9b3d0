// Where ordered work keeps its leases and its members: a key-value store whose writes can be
// made conditional on a key's revision (compare-and-set). StreamLeaseStore is the broker's:
// a JetStream key-value bucket (a stream `KV_<bucket>` of subjects `$KV.<bucket>.<key>`, one
// message kept per key, as nats-server 2.9 and later serve it), so `nats kv` can read it.
//
//   StreamLeaseStore store(api, "natsfleet-orders", 3);
//   auto rev = store.put_if("lease.7", "owner=a", 0);  // taken only if nobody holds it
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "natsfleet/error.h"

namespace natsfleet::nats {
class JetStreamApi;
}

namespace natsfleet::fleet {

// A key's newest write: its revision (the store's sequence number, rising across the store)
// and its value.
struct StoredValue {
  uint64_t revision = 0;
  std::string value;
};

class LeaseStore {
 public:
  virtual ~LeaseStore() = default;
  // The key's newest value; none when the key is absent (never written, or removed).
  virtual Result<std::optional<StoredValue>> get(const std::string& key) = 0;
  // Writes `value` only if the key's newest revision is still `expected` (0: the key is absent);
  // returns the new revision. Another revision: an error with is_jetstream(kJsWrongLastSequence).
  virtual Result<uint64_t> put_if(const std::string& key, const std::string& value,
                                  uint64_t expected) = 0;
  // Writes `value` whatever the key holds; returns the new revision.
  virtual Result<uint64_t> put(const std::string& key, const std::string& value) = 0;
  virtual Result<void> remove(const std::string& key) = 0;
  // The keys that begin with `prefix` (a whole dot-separated token, like "members.").
  virtual Result<std::vector<std::string>> keys(const std::string& prefix) = 0;
};

class StreamLeaseStore final : public LeaseStore {
 public:
  // `api` must outlive the store. `replicas`: of the bucket's stream when it is created.
  StreamLeaseStore(nats::JetStreamApi& api, std::string bucket, int replicas);

  // Creates the bucket's stream when it does not exist yet.
  Result<void> ensure();
  const std::string& bucket() const { return bucket_; }

  Result<std::optional<StoredValue>> get(const std::string& key) override;
  Result<uint64_t> put_if(const std::string& key, const std::string& value,
                          uint64_t expected) override;
  Result<uint64_t> put(const std::string& key, const std::string& value) override;
  Result<void> remove(const std::string& key) override;
  Result<std::vector<std::string>> keys(const std::string& prefix) override;

 private:
  std::string subject(const std::string& key) const { return prefix_ + key; }

  nats::JetStreamApi& api_;
  const std::string bucket_;
  const std::string stream_;
  const std::string prefix_;  // "$KV.<bucket>."
  const int replicas_;
};

// The bucket of an ordered work's leases: "natsfleet-<work>".
std::string lease_bucket(const std::string& work);

}  // namespace natsfleet::fleet
