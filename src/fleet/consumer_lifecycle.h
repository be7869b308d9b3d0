// What a subscription's consumer should be on the broker, decided from the broker's answers:
// create it, bind to it, update it in place, migrate the work to a successor of the right shape,
// retire that predecessor once unbound, confirm it is really missing, recreate it after the last
// ack floor. No threads and no clock of its own (the caller passes the time and the waits), so
// unit tests script the broker through nats::ConsumerApi.
//
//   ConsumerLifecycle lifecycle(spec, options, api, log);
//   auto info = lifecycle.bind(stream);           // reconcile; then consume info->config
//   lifecycle.tend_predecessor(Clock::now());      // every info_interval
//   if (lifecycle.confirm(wait).lookup == Lookup::consumer_missing)
//   lifecycle.recreate(last_handled);
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "nats/consumer_api.h"
#include "natsfleet/spec.h"

namespace spdlog {
class logger;
}

namespace natsfleet::fleet {

class ConsumerLifecycle {
 public:
  using Clock = std::chrono::steady_clock;

  // A shared durable that every replica of the fleet binds to (work), or this replica's own
  // named ephemeral (a JetStream broadcast).
  enum class Scope { shared, per_replica };
  // What a lookup of the bound consumer found, and what the broker said when it was not present.
  enum class Lookup { present, consumer_missing, stream_missing, unreachable };
  struct Found {
    Lookup lookup = Lookup::present;
    Error error;  // set unless present
  };

  struct Options {
    Scope scope = Scope::shared;
    // per_replica: this replica's consumer name (unique to the process).
    std::string replica_consumer;
    // per_replica: start with the last message of each subject, then new ones.
    bool last_per_subject = false;
    std::chrono::milliseconds retire_grace{30'000};
    std::chrono::milliseconds broadcast_inactive{60'000};
    int missing_lookups = 3;
    std::chrono::milliseconds missing_window{3'000};
    // shared, start "all": how long a replica's first bind that finds the consumer missing on a
    // stream holding messages waits before creating it from the stream's start. The consumer
    // may have been deleted a moment ago, and the replicas that were bound to it recreate it
    // after the ack floor they saw; created first from the start, it would replay the whole
    // stream to the fleet. Not waited when no live replica knew the consumer (AskPeers). 0: no
    // wait.
    std::chrono::milliseconds first_create_wait{0};
  };
  // Sleeps for the time given; false when the subscription is stopping.
  using Wait = std::function<bool(std::chrono::milliseconds)>;
  // Whether a live replica of this work was bound to its consumer on `stream`: `nobody` (none
  // is listening), `someone` (one answered) or `unknown` (no answer in time, an error).
  enum class Peers { nobody, someone, unknown };
  using AskPeers = std::function<Peers(const std::string& stream)>;

  ConsumerLifecycle(const WorkSpec& spec, Options options, nats::ConsumerApi& api,
                    std::shared_ptr<spdlog::logger> log);

  // The consumer to consume on `stream`, made right on the broker first. Remembers the stream,
  // the consumer and its ack floor. A replica's own consumer, when made anew, resumes after the
  // higher of its last ack floor and `last_handled`. `wait` serves first_create_wait (none: no
  // wait), which `ask_peers` answering `nobody` skips.
  Result<nats::ConsumerInfo> bind(const std::string& stream, uint64_t last_handled = 0,
                                  const Wait& wait = {}, const AskPeers& ask_peers = {});

  // One lookup of the bound consumer; raises the ack floor when present.
  Found look_up();
  // look_up, and when the consumer or stream seems missing, again `missing_lookups` times over
  // `missing_window` (a new leader may briefly not know it): only a verdict that holds across the
  // window counts. `wait(d)` sleeps and returns false when the subscription is stopping.
  Found confirm(const Wait& wait);

  // Recreates the bound consumer after the last ack floor seen (or, per_replica, after
  // `last_handled` when higher); from the stream's start when the stream was created anew.
  Result<nats::ConsumerInfo> recreate(uint64_t last_handled);

  // A floor learnt elsewhere (the replicas' answers): it only moves up.
  void saw_ack_floor(uint64_t floor);
  // A consumer info read elsewhere (polling): raises the floor, and says so once when the
  // consumer was made anew since with another start, and where the new one starts (true then).
  bool saw_consumer(const nats::ConsumerInfo& info);

  // Retires the predecessor of a migration once nobody has been bound to it for retire_grace
  // (any replica may; one already gone counts as retired). An error only when the broker refused
  // the delete.
  Result<void> tend_predecessor(Clock::time_point now);

  const std::string& stream() const { return stream_; }
  const std::string& consumer() const { return consumer_; }
  const std::string& predecessor() const { return predecessor_; }
  uint64_t ack_floor() const { return ack_floor_; }
  // "work" or "broadcast", as logs name the subscription.
  const char* kind() const { return options_.scope == Scope::shared ? "work" : "broadcast"; }

 private:
  Result<nats::ConsumerInfo> reconcile(const std::string& stream, uint64_t stream_last_seq,
                                       const Wait& wait, const AskPeers& ask_peers);
  Result<nats::ConsumerInfo> adopt(const std::string& stream, nats::ConsumerInfo info);
  Result<nats::ConsumerInfo> migrate(const std::string& stream, const nats::ConsumerInfo& old,
                                     const std::string& problem);
  Result<nats::ConsumerInfo> ensure_replica_consumer(const std::string& stream,
                                                     uint64_t last_handled);
  uint64_t resume_floor(uint64_t last_handled) const;
  // Creates `config`; when a peer replica won the race, reads theirs instead.
  Result<nats::ConsumerInfo> create_or_read(const std::string& stream,
                                            const nats::ConsumerConfig& config, bool* created);
  void log_once(const std::string& text);

  const WorkSpec& spec_;
  const Options options_;
  nats::ConsumerApi& api_;
  std::shared_ptr<spdlog::logger> log_;
  std::set<std::string> logged_;

  std::string stream_;
  std::string consumer_;
  std::string stream_created_;  // the stream's creation time: a recreated stream differs
  std::string consumer_start_;  // where the bound consumer delivers from, in words
  uint64_t ack_floor_ = 0;
  bool bound_before_ = false;  // this process has bound the consumer at least once
  std::string predecessor_;    // a wrong-shape consumer awaiting retirement
  Clock::time_point predecessor_unbound_since_{};
};

}  // namespace natsfleet::fleet
