// An admin client for tests: creates streams, publishes, deletes consumers, reads consumer info,
// through natsfleet's own nats layer (the tests exercise the product, not a second client).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "nats/connection.h"
#include "nats/jetstream_api.h"

namespace natsfleet::testing {

class BrokerClient {
 public:
  // Connects and waits (up to 10 s) until connected; throws std::runtime_error otherwise.
  explicit BrokerClient(const std::vector<std::string>& servers);
  explicit BrokerClient(const std::string& server) : BrokerClient(std::vector{server}) {}

  nats::JetStreamApi& api() { return *api_; }
  nats::Connection& connection() { return *connection_; }

  // Retries while the broker (or a cluster's meta leader) is not ready yet.
  void create_stream(const std::string& name, const std::vector<std::string>& subjects,
                     int replicas = 1);
  // A JetStream publish: waits for the stream's ack and returns the sequence.
  uint64_t publish(const std::string& subject, const std::string& data);
  // `count` messages "<prefix><i>" (i from `first`), acked by the stream, pipelined in windows.
  void publish_many(const std::string& subject, int count, const std::string& prefix = "m",
                    int first = 0);
  nats::ConsumerInfo consumer(const std::string& stream, const std::string& name);
  void delete_consumer(const std::string& stream, const std::string& name);

 private:
  std::unique_ptr<nats::Connection> connection_;
  std::unique_ptr<nats::JetStreamApi> api_;
};

}  // namespace natsfleet::testing
