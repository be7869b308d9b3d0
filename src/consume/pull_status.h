// What a status message on a pull inbox means (server 2.9 wording). Status messages carry no
// payload; 408 and 409 tell how much of the request was left unfilled.
#pragma once

#include <cstdint>
#include <string>

#include "natsfleet/message.h"

namespace natsfleet::consume {

enum class PullSignal {
  heartbeat,          // 100 Idle Heartbeat: the request is alive, nothing to deliver
  no_messages,        // 404: only for no_wait requests
  request_expired,    // 408 Request Timeout: the request ended, part of it unfilled
  consumer_deleted,   // 409 Consumer Deleted
  leadership_change,  // 409 Leadership Change: waiting requests were dropped
  max_waiting,        // 409 Exceeded MaxWaiting: too many waiting requests
  request_done,       // 409 Batch Completed / MaxBytes / MaxRequest*: this request ended
  push_consumer,      // 409 Consumer is push based
  bad_request,        // 400
  no_responders,      // 503: nobody serves the consumer's API subject (consumer gone)
  other,
};

struct PullStatus {
  PullSignal signal = PullSignal::other;
  uint64_t pending_messages = 0;  // Nats-Pending-Messages: unfilled part of the request
  uint64_t pending_bytes = 0;
  std::string description;
};

PullStatus classify_pull_status(int status, const std::string& description, const Headers& headers);

const char* to_string(PullSignal signal) noexcept;

// A pull that asks whether a consumer has a leader serving pulls, and takes nothing: one message
// of at most 1 byte, no wait. A leader answers 404 (nothing pending) or 409 (the next message is
// larger), and delivers nothing; with no leader, nobody serves the pull subject (503, which a
// request reports as Errc::no_responders).
inline constexpr const char* kLeaderProbeBody = R"({"batch":1,"max_bytes":1,"no_wait":true})";

}  // namespace natsfleet::consume
