// Fleet's inside: the connection, the declared and running subscriptions, their start and
// shutdown. fleet_impl.cc starts and stops the whole; fleet_subscriptions.cc adds, removes and
// reports on one subscription; fleet.cc is the public API over both.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "fleet/broker_watch.h"
#include "fleet/fatal_reporter.h"
#include "fleet/fleet_publisher.h"
#include "fleet/supervised.h"
#include "natsfleet/fleet.h"

namespace natsfleet::nats {
class Connection;
struct ConnectionEvents;
}  // namespace natsfleet::nats

namespace natsfleet {

// What a Subscription handle calls through: the fleet until ~Fleet detaches it. Any thread.
class FleetLink {
 public:
  explicit FleetLink(Fleet::Impl* impl) : impl_(impl) {}
  // f(fleet), or shutting_down once the fleet is gone; calls run beside each other.
  template <typename R, typename F>
  R call(F&& f) {
    std::shared_lock lock(mu_);
    if (impl_ == nullptr) return R(Errc::shutting_down, "the fleet is gone");
    return f(*impl_);
  }
  // Later calls answer shutting_down; waits for those under way.
  void detach() {
    std::unique_lock lock(mu_);
    impl_ = nullptr;
  }

 private:
  std::shared_mutex mu_;
  Fleet::Impl* impl_;
};

// Hidden: a class nested in the exported Fleet would otherwise export its members, which are
// no part of the ABI.
class __attribute__((visibility("hidden"))) Fleet::Impl {
 public:
  explicit Impl(FleetOptions options);
  // The subscriptions' destructors wait for every handler still running.
  ~Impl();

  // Shuts down (the default deadline) if still running, then waits for handlers that overran
  // until the deadline of the last shutdown or remove. False when one still runs: this Impl must
  // then be freed where waiting for it harms nobody.
  bool close();
  Result<void> start();
  void shutdown(std::chrono::milliseconds deadline);
  void on_fatal(FatalHandler handler) { reporter_.on_fatal(std::move(handler)); }

  // Before start(), the subscription starts with the fleet; after, it starts at once. Its id.
  Result<uint64_t> add_work(WorkSpec spec, WorkHandler handler);
  Result<uint64_t> add_broadcast(BroadcastSpec spec, BroadcastHandler handler);
  // Stops one subscription as shutdown() stops them all, the connection staying up: no more
  // pulls, running handlers finish (until `deadline`) and are acked, what never started is
  // given back. Its name is free again once this returns. `id`: only the subscription of that
  // name a handle stands for.
  Result<void> remove(const std::string& name, std::chrono::milliseconds deadline,
                      std::optional<uint64_t> id = std::nullopt);
  // This subscription's health, while `id` is the one of that name.
  Result<SubscriptionHealth> health_of(const std::string& name, uint64_t id);
  FleetHealth health() const;

  Result<void> publish(const std::string& subject, const std::string& data,
                       const std::string& msg_id, const Headers& extra) {
    return publisher_.publish(connection_.get(), subject, data, msg_id, extra);
  }
  Result<uint64_t> publish_to_stream(const std::string& subject, const std::string& data,
                                     const std::string& msg_id, std::chrono::milliseconds timeout,
                                     const Headers& extra) {
    return publisher_.publish_to_stream(connection_.get(), subject, data, msg_id, timeout, extra);
  }
  Result<std::optional<Message>> last_stored(const std::string& stream, const std::string& subject,
                                             std::chrono::milliseconds timeout) {
    return publisher_.last_stored(connection_.get(), stream, subject, timeout);
  }

  const std::shared_ptr<FleetLink>& link() const { return link_; }

 private:
  // fleet_impl.cc: the whole fleet's start and stop.
  nats::ConnectionEvents connection_events();
  Result<void> start_watch();
  Result<void> start_subscriptions();
  void abandon_start();
  void on_connection(bool connected);
  void on_closed(const std::string& why);
  void report_fatal(const std::string& subscription, const std::string& reason);

  // fleet_subscriptions.cc: one subscription.
  std::unique_ptr<fleet::Supervised> make_work(WorkSpec spec, WorkHandler handler);
  std::unique_ptr<fleet::Supervised> make_broadcast(const BroadcastSpec& spec,
                                                    BroadcastHandler handler);
  Result<uint64_t> reserve(const std::string& name);
  Result<void> known_as(const std::string& name, uint64_t id) const;
  template <typename Make>
  Result<void> start_now(const std::string& name, Make make);

  fleet::FleetContext context_;
  std::mutex mu_;  // declarations, start
  std::vector<std::pair<WorkSpec, WorkHandler>> work_;
  std::vector<std::pair<BroadcastSpec, BroadcastHandler>> broadcast_;
  // Every subscription's name, with the id its handles carry (reserve()).
  std::map<std::string, uint64_t> names_;
  uint64_t next_id_ = 0;
  // Detached by ~Fleet before anything else.
  const std::shared_ptr<FleetLink> link_ = std::make_shared<FleetLink>(this);
  // Removed while a handler of theirs overran the deadline: kept until ~Impl has waited.
  std::vector<std::unique_ptr<fleet::Supervised>> removed_;
  fleet::Clock::time_point last_deadline_{};  // of the last shutdown() or remove()
  fleet::FatalReporter reporter_;

  std::atomic<bool> started_{false};
  std::atomic<bool> shutting_down_{false};
  std::mutex shutdown_mu_;
  bool shut_down_ = false;

  mutable std::mutex subs_mu_;
  std::unique_ptr<nats::Connection> connection_;
  std::vector<std::unique_ptr<fleet::Supervised>> subs_;
  // Made in start() before the connection, kept until the end (its events may come any time).
  std::unique_ptr<fleet::BrokerWatch> watch_;

  fleet::FleetPublisher publisher_;
};

}  // namespace natsfleet
