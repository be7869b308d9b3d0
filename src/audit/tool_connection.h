// The connection of a command-line tool (audit, dead-letters): one connection attempt, no
// reconnects, bounded by the command's deadline, and when the broker cannot be reached an error
// that names each server and why.
//
//   auto connection = connect_once({.servers = servers, .name = "natsfleet-audit"}, deadline);
//   if (!connection) die(connection.error().describe());   // "cannot reach nats://...: ..."
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "nats/connection.h"
#include "natsfleet/error.h"
#include "natsfleet/fleet.h"

namespace natsfleet::audit {

struct ToolConnectOptions {
  std::vector<std::string> servers;
  std::string name;  // the client name the broker shows (in /connz)
  std::string credentials_file;
  BrokerAuth auth;
  TlsFiles tls;
  std::chrono::milliseconds timeout{20000};  // the command's, reported when it runs out
};

// Connected, or an error: Errc::not_connected with "cannot reach <server>: <reason>; ..." when no
// server answered before `deadline`, or the options' own problem (TLS files, credentials).
Result<std::unique_ptr<nats::Connection>> connect_once(
    const ToolConnectOptions& options, std::chrono::steady_clock::time_point deadline);

// Each API call may wait for whatever is left until `deadline`; once none is left, calls time out
// at once (a non-positive timeout would mean "wait for ever" to nats.c).
std::chrono::milliseconds time_left(std::chrono::steady_clock::time_point deadline);

}  // namespace natsfleet::audit
