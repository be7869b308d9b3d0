// Fleet::Impl's one subscription at a time: add (before or after start), remove with its
// deadline, its health; and the fleet's health, gathered from every subscription.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <system_error>

#include "base/log_event.h"
#include "fleet/broadcast_subscription.h"
#include "fleet/consumer_subscription.h"
#include "fleet/fleet_impl.h"
#include "fleet/jetstream_broadcast.h"
#include "fleet/ordered/ordered_work.h"
#include "fleet/stream_declaration.h"
#include "nats/connection.h"
#include "natsfleet/validate.h"

namespace natsfleet {

using fleet::Clock;

Result<uint64_t> Fleet::Impl::add_work(WorkSpec spec, WorkHandler handler) {
  std::lock_guard lock(mu_);
  if (auto checked = validate_work(spec); !checked)
    return Result<uint64_t>(Errc::invalid_argument,
                            "work " + spec.name + ": " + checked.error().message);
  if (!handler)
    return Result<uint64_t>(Errc::invalid_argument, "work " + spec.name + ": no handler");
  if (shutting_down_) return Result<uint64_t>(Errc::shutting_down, "add_work after shutdown");
  auto id = reserve(spec.name);
  if (!id) return id;
  // From here on `subject` is the first filter subject, and `subjects` holds two or more.
  if (!spec.subjects.empty()) {
    spec.subject = spec.subjects.front();
    if (spec.subjects.size() == 1) spec.subjects.clear();
  }
  if (!started_) {
    work_.emplace_back(std::move(spec), std::move(handler));
    return id;
  }
  if (auto started = start_now(spec.name, [&] { return make_work(spec, std::move(handler)); });
      !started)
    return started.error();
  return id;
}

// A relay adds its broadcast when the first session attaches, so after start() is usual here.
Result<uint64_t> Fleet::Impl::add_broadcast(BroadcastSpec spec, BroadcastHandler handler) {
  std::lock_guard lock(mu_);
  if (auto checked = validate_broadcast(spec); !checked)
    return Result<uint64_t>(Errc::invalid_argument,
                            "broadcast " + spec.name + ": " + checked.error().message);
  if (!handler)
    return Result<uint64_t>(Errc::invalid_argument, "broadcast " + spec.name + ": no handler");
  if (shutting_down_) return Result<uint64_t>(Errc::shutting_down, "add_broadcast after shutdown");
  auto id = reserve(spec.name);
  if (!id) return id;
  if (!started_) {
    broadcast_.emplace_back(std::move(spec), std::move(handler));
    return id;
  }
  if (auto started = start_now(spec.name, [&] { return make_broadcast(spec, std::move(handler)); });
      !started)
    return started.error();
  return id;
}

Result<SubscriptionHealth> Fleet::Impl::health_of(const std::string& name, uint64_t id) {
  {
    std::lock_guard lock(mu_);
    if (auto known = known_as(name, id); !known) return known.error();
    if (!started_) {
      SubscriptionHealth waiting;  // binding, as it will once the fleet starts
      waiting.name = name;
      return waiting;
    }
  }
  auto all = health();
  for (auto& sub : all.subscriptions)
    if (sub.name == name) return std::move(sub);
  return Result<SubscriptionHealth>(Errc::invalid_argument,
                                    "subscription " + name + " was removed");
}

Result<void> Fleet::Impl::remove(const std::string& name, std::chrono::milliseconds deadline,
                                 std::optional<uint64_t> id) {
  // One at a time, and never beside shutdown(): the connection stays up until this returns.
  std::lock_guard once(shutdown_mu_);
  const auto until = Clock::now() + deadline;
  std::unique_ptr<fleet::Supervised> sub;
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) return Result<void>(Errc::shutting_down, "remove after shutdown");
    last_deadline_ = std::max(last_deadline_, until);
    if (id) {
      if (auto known = known_as(name, *id); !known) return known;
    } else if (!names_.count(name)) {
      return Result<void>(Errc::invalid_argument, "no subscription named " + name);
    }
    if (!started_) {
      std::erase_if(work_, [&](const auto& w) { return w.first.name == name; });
      std::erase_if(broadcast_, [&](const auto& b) { return b.first.name == name; });
      names_.erase(name);
      return {};
    }
    std::lock_guard subs_lock(subs_mu_);
    auto it = std::find_if(subs_.begin(), subs_.end(),
                           [&](const auto& s) { return s->health().name == name; });
    if (it == subs_.end())
      return Result<void>(Errc::invalid_argument, "no subscription named " + name);
    sub = std::move(*it);
    subs_.erase(it);
  }
  base::log_event(*context_.log, spdlog::level::info,
                  {{"event", "subscription-stopping"}, {"subscription", name}},
                  "{}: stopping (deadline {} ms)", name, deadline.count());
  sub->begin_shutdown();
  const bool finished = sub->finish_handlers(until);
  // Its acks reach the broker before a successor (the same work, reloaded) binds.
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
  if (connection_->connected() && left.count() > 0)
    (void)connection_->flush(std::min(left, std::chrono::milliseconds(1000)));
  sub->join();
  if (finished) sub.reset();  // joins its handler threads, which have all returned
  {
    std::lock_guard lock(mu_);
    names_.erase(name);
    // A handler that overran is waited for by close() until the last deadline, and by ~Impl.
    if (sub) removed_.push_back(std::move(sub));
  }
  base::log_event(*context_.log, spdlog::level::info,
                  {{"event", "subscription-stopped"}, {"subscription", name}}, "{}: stopped{}",
                  name, finished ? "" : " (a handler was still running at the deadline)");
  return {};
}

FleetHealth Fleet::Impl::health() const {
  FleetHealth h;
  h.fatal_reason = reporter_.reason();
  h.live = h.fatal_reason.empty();
  std::lock_guard lock(subs_mu_);
  h.connected = connection_ && connection_->connected();
  if (!h.connected && watch_) h.broker_error = watch_->cause();
  h.reconnects = connection_ ? connection_->reconnects() : 0;
  h.ready = h.live && h.connected;
  for (const auto& sub : subs_) {
    h.subscriptions.push_back(sub->health());
    auto& s = h.subscriptions.back();
    // Bound means delivering: not while the broker is out of reach.
    if (s.state == SubscriptionState::bound && !h.connected) {
      s.state = SubscriptionState::recovering;
      s.last_error = "not connected to the broker" +
                     (h.broker_error.empty() ? std::string() : ": " + h.broker_error);
    }
    if (s.state != SubscriptionState::bound || s.downstream_down) h.ready = false;
  }
  return h;
}

std::unique_ptr<fleet::Supervised> Fleet::Impl::make_work(WorkSpec spec, WorkHandler handler) {
  if (spec.per_key) return std::make_unique<fleet::OrderedWork>(spec, std::move(handler), context_);
  fleet::ReplicaOptions replica;
  if (spec.declared_stream) {
    spec.stream = spec.declared_stream->name;
    replica.stream_to_create = fleet::declared_stream_config(spec);
  }
  return std::make_unique<fleet::ConsumerSubscription>(
      std::move(spec), std::move(handler), context_, fleet::ConsumerSubscription::Scope::shared,
      std::move(replica));
}

std::unique_ptr<fleet::Supervised> Fleet::Impl::make_broadcast(const BroadcastSpec& spec,
                                                               BroadcastHandler handler) {
  if (spec.source == BroadcastSource::core)
    return std::make_unique<fleet::BroadcastSubscription>(spec, std::move(handler), context_);
  return fleet::jetstream_broadcast(spec, std::move(handler), context_);
}

// A new subscription's name (mu_ held): its id, or invalid_argument when it is taken.
Result<uint64_t> Fleet::Impl::reserve(const std::string& name) {
  if (!names_.emplace(name, next_id_ + 1).second)
    return Result<uint64_t>(Errc::invalid_argument, "duplicate subscription name " + name);
  return ++next_id_;
}

// Whether `name` is the subscription `id` stands for (mu_ held).
Result<void> Fleet::Impl::known_as(const std::string& name, uint64_t id) const {
  auto it = names_.find(name);
  if (it == names_.end() || it->second != id)
    return Result<void>(Errc::invalid_argument, "subscription " + name + " was removed");
  return {};
}

// Makes and starts a subscription on the running fleet (mu_ held): shutdown sees it started,
// or not at all. A thread the system refuses frees the name again.
template <typename Make>
Result<void> Fleet::Impl::start_now(const std::string& name, Make make) {
  std::lock_guard subs_lock(subs_mu_);
  try {
    auto sub = make();
    sub->start();
    subs_.push_back(std::move(sub));
  } catch (const std::system_error& e) {
    // The subscription's own threads are gone with it (or never started).
    names_.erase(name);
    return Result<void>(Errc::no_resources, name + ": " + e.what());
  }
  return {};
}

}  // namespace natsfleet
