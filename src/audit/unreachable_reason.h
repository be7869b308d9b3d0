// Why a broker cannot be reached, in words an operator can act on. nats.c reports only "No server
// available for connection" once it gives up; a plain TCP connect to the same address tells a
// refused port from a name that does not resolve, a silent host, or a port that accepts
// connections but never completes the NATS handshake (a paused broker, TLS or credentials).
//
//   unreachable_reason("nats://127.0.0.1:1", 2s)   // "Connection refused"
#pragma once

#include <chrono>
#include <string>

namespace natsfleet::audit {

// One TCP connection attempt per address the URL's host resolves to (port 4222 when the URL has
// none), each waiting at most `timeout`. Never returns an empty string.
std::string unreachable_reason(const std::string& server, std::chrono::milliseconds timeout);

}  // namespace natsfleet::audit
