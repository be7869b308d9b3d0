// Fleet options and specs scaled down for tests: the same logic, shorter clocks.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "natsfleet/fleet.h"

namespace natsfleet::testing {

using namespace std::chrono_literals;

inline FleetOptions fast_options(std::vector<std::string> servers, std::string name) {
  FleetOptions o;
  o.name = std::move(name);
  o.servers = std::move(servers);
  o.reconnect_wait_min = 20ms;
  o.reconnect_wait_max = 100ms;
  o.connect_timeout = 500ms;
  o.request_timeout = 1s;
  o.bind_backoff_min = 50ms;
  o.bind_backoff_max = 300ms;
  o.missing_lookups = 3;
  o.missing_window = 600ms;
  o.info_interval = 500ms;
  return o;
}

inline WorkSpec fast_work(std::string name, std::string subject) {
  WorkSpec w;
  w.name = std::move(name);
  w.subject = std::move(subject);
  w.flow.ack_wait = 2s;
  w.flow.heartbeat = 250ms;
  w.flow.pull_expires = 5s;
  w.failure.nak_backoff_min = 50ms;
  w.failure.nak_backoff_max = 200ms;
  return w;
}

// A started replica of `spec` on the broker at `url` that acks every message it gets and counts
// them: the other replica of a test that checks what the first gave back.
class AckingReplica {
 public:
  AckingReplica(const std::string& url, const WorkSpec& spec, std::string name = "b")
      : fleet_(fast_options({url}, std::move(name))) {
    started_ = fleet_
                   .add_work(spec,
                             [this](const Message&) {
                               ++handled_;
                               return Disposition::ack();
                             })
                   .ok() &&
               fleet_.start().ok();
  }
  bool started() const { return started_; }
  int handled() const { return handled_.load(); }

 private:
  std::atomic<int> handled_{0};
  Fleet fleet_;  // after handled_: its handlers stop before handled_ goes
  bool started_ = false;
};

}  // namespace natsfleet::testing
