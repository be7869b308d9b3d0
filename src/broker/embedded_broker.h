// A child nats-server with JetStream on a free loopback port, for `make demo` and for running
// without a configured broker. Its state directory survives restarts; the process does not
// outlive its owner.
//
//   EmbeddedBroker broker({.state_dir = "/var/lib/natsfleet/broker"});
//   if (auto started = broker.start(); !started) ...;
//   connect_to(broker.url());
#pragma once

#include <chrono>
#include <string>

#include "broker/nats_server_process.h"
#include "natsfleet/error.h"

namespace natsfleet::broker {

struct EmbeddedBrokerOptions {
  std::string executable = "nats-server";
  std::string state_dir;  // empty: a new temporary directory
  int port = 0;           // 0: a free loopback port, kept across restarts
  std::chrono::milliseconds ready_timeout = std::chrono::seconds(10);
};

class EmbeddedBroker {
 public:
  explicit EmbeddedBroker(EmbeddedBrokerOptions options = {});
  // Stops the child (SIGTERM, then SIGKILL); removes the state directory if it made it.
  ~EmbeddedBroker();
  EmbeddedBroker(const EmbeddedBroker&) = delete;
  EmbeddedBroker& operator=(const EmbeddedBroker&) = delete;

  // Starts the server and waits until it accepts clients. Fails naming the log file.
  Result<void> start();
  void stop();  // graceful
  void kill();  // SIGKILL, as a crash would
  bool running() const { return process_.pid() > 0; }

  std::string url() const;
  int port() const { return port_; }
  const std::string& state_dir() const { return state_dir_; }
  std::string log_file() const { return state_dir_ + "/nats-server.log"; }

 private:
  EmbeddedBrokerOptions options_;
  std::string state_dir_;
  int port_ = 0;
  NatsServerProcess process_;
  bool owns_state_dir_ = false;
};

}  // namespace natsfleet::broker
