// Why a broker cannot be reached, in words an operator can act on. nats.c reports only "No server
// available for connection" once it gives up; a plain TCP connect to the same address tells a
// refused port from a name that does not resolve, a silent host, a port that never greets like a
// NATS server (a paused broker, another service), or a server whose greeting says it requires
// authentication or TLS (the client's were refused).
//
//   unreachable_reason("nats://127.0.0.1:1", 2s)   // "Connection refused"
#pragma once

#include <chrono>
#include <string>

namespace natsfleet::nats {

// One TCP connection attempt per address the URL's host resolves to (port 4222 when the URL has
// none), each waiting at most `timeout`. Never returns an empty string.
std::string unreachable_reason(const std::string& server, std::chrono::milliseconds timeout);

}  // namespace natsfleet::nats
