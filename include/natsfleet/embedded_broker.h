// A child nats-server with JetStream on a free loopback port: for demos, examples and tests of a
// service, and for running without a configured broker (what `natsfleet run` does when the
// config names no servers). Its state directory survives restarts; the process does not outlive
// its owner. Needs the nats-server executable.
//
//   natsfleet::EmbeddedBroker broker({.state_dir = "/var/lib/myservice/broker"});
//   if (auto started = broker.start(); !started) die(started.error().describe());
//   natsfleet::Fleet fleet({.name = "mailer", .servers = {broker.url()}});
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "natsfleet/error.h"
#include "natsfleet/export.h"

namespace natsfleet {

struct EmbeddedBrokerOptions {
  std::string executable = "nats-server";  // looked up in PATH
  std::string state_dir{};                 // empty: a new temporary directory
  int port = 0;                            // 0: a free loopback port, kept across restarts
  std::chrono::milliseconds ready_timeout = std::chrono::seconds(10);
  // Subject mappings, source -> destination in nats-server's syntax: per-key ordered work
  // needs its partition mapping (its form: docs/tutorial/library.md, ordered work).
  std::vector<std::pair<std::string, std::string>> mappings{};
};

// Not thread-safe: one call at a time (start, stop and kill change the child process).
class NATSFLEET_API EmbeddedBroker {
 public:
  explicit EmbeddedBroker(EmbeddedBrokerOptions options = {});
  // Stops the child (SIGTERM, then SIGKILL); removes the state directory if it made it.
  ~EmbeddedBroker();
  EmbeddedBroker(const EmbeddedBroker&) = delete;
  EmbeddedBroker& operator=(const EmbeddedBroker&) = delete;

  // Starts the server and waits until it accepts clients. Fails naming the log file. A stopped
  // broker may be started again, on the same port and state directory.
  [[nodiscard]] Result<void> start();
  void stop();  // graceful
  void kill();  // SIGKILL, as a crash would
  bool running() const;

  std::string url() const;  // nats://127.0.0.1:<port>
  int port() const { return port_; }
  const std::string& state_dir() const { return state_dir_; }
  std::string log_file() const { return state_dir_ + "/nats-server.log"; }

 private:
  struct Process;  // the child, as src/broker launches it

  EmbeddedBrokerOptions options_;
  std::string state_dir_;
  int port_ = 0;
  std::unique_ptr<Process> process_;
  bool owns_state_dir_ = false;
};

}  // namespace natsfleet
