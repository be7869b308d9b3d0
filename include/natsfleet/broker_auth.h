// How a fleet proves who it is to the broker besides a .creds file or a TLS client certificate.
//
//   natsfleet::FleetOptions o;
//   o.auth = {.user = "orders", .password_file = "/run/secrets/nats-password"};
#pragma once

#include <string>

namespace natsfleet {

// Who the fleet is to the broker besides a .creds file or a TLS client certificate: a user and
// password, a token or a user NKey, at most one of them. Each secret is read from a file (a
// mounted Kubernetes Secret, a systemd credential), never written in a config.
struct BrokerAuth {
  std::string user{};  // with the password in password_file
  std::string password_file{};
  std::string token_file{};      // read again at every connection attempt: a replaced token is used
  std::string nkey_seed_file{};  // a user NKey seed ("SU...", as NATS tools write it)
};

}  // namespace natsfleet
