// The broker calls that decide a consumer's lifecycle (look up, create, update, delete), as an
// interface: JetStreamApi answers them from the broker, unit tests from a script.
#pragma once

#include <string>

#include "nats/consumer_config.h"
#include "nats/stream_config.h"
#include "natsfleet/error.h"

namespace natsfleet::nats {

class ConsumerApi {
 public:
  virtual ~ConsumerApi() = default;

  // Errors: is_stream_not_found() / is_consumer_not_found() when the broker said so; any other
  // error means it did not answer (a timeout, no responders) or refused.
  virtual Result<StreamInfo> stream_info(const std::string& stream) = 0;
  virtual Result<ConsumerInfo> consumer_info(const std::string& stream,
                                             const std::string& consumer) = 0;
  // Create. Server 2.10 and later never change an existing consumer on a create (an existing one
  // of another config is an error; of the same config, its info); 2.9 ignores the action and
  // updates in place when only mutable fields differ (an upsert). A config with durable_name
  // makes a durable; one with only a name, a named ephemeral.
  virtual Result<ConsumerInfo> create_consumer(const std::string& stream,
                                               const ConsumerConfig& config) = 0;
  // Update an existing consumer's mutable fields in place (2.10: an error when it is missing;
  // 2.9: as create_consumer).
  virtual Result<ConsumerInfo> update_consumer(const std::string& stream,
                                               const ConsumerConfig& config) = 0;
  virtual Result<void> delete_consumer(const std::string& stream, const std::string& consumer) = 0;
};

}  // namespace natsfleet::nats
