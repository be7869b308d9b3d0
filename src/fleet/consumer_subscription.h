// A JetStream consumer under supervision, at run time: bind it, consume it, hand each message to
// the handler and answer the broker, and recover from everything the broker can do to it. Which
// consumer, and how it is made right on the broker (create, update in place, migrate, retire,
// recreate), is ConsumerLifecycle's decision (fleet/consumer_lifecycle.h).
//
// Two scopes: Scope::shared is work (one durable every replica of the fleet binds to, so each
// message goes to one replica); Scope::per_replica is a JetStream broadcast (this replica's own
// named ephemeral, recreated after the last message this replica saw).
//
// The supervisor's thread binds, watches and recovers the consumer and owns its intake (the pull
// engine, or a push queue); each message the intake receives goes through the DeliveryPipeline
// (fleet/delivery_pipeline.h), whose handler threads answer the broker.
//
//   binding --bound--> bound <--> recovering ; bound <--> stalled ; any -> fatal | stopped
//
// Missed heartbeats, a reconnect, a "consumer deleted" status or a failed info poll move a bound
// subscription to recovering, which looks the consumer up: present -> pull again; missing
// (confirmed by several lookups) -> recreate or fatal per on_missing; stream gone -> fatal;
// broker unreachable -> a warning, and wait. Each of these rules is a function in
// fleet/supervisor_rules.h; this class gathers what it sees and carries out what they decide.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/backoff.h"
#include "consume/pull_status.h"
#include "fleet/consumer_lifecycle.h"
#include "fleet/consumer_watch.h"
#include "fleet/delivery_pipeline.h"
#include "fleet/subscription_intake.h"
#include "fleet/subscription_status.h"
#include "fleet/supervised.h"
#include "fleet/supervisor_rules.h"
#include "nats/jetstream_api.h"
#include "nats/stream_config.h"

namespace natsfleet::fleet {

// A per-replica subscription's extras: `stream_to_create`, a stream config to create when
// spec.stream does not exist (null: none); `last_per_subject`, start with the last message of
// each subject.
struct ReplicaOptions {
  std::optional<nats::StreamConfig> stream_to_create;
  bool last_per_subject = false;
};

class ConsumerSubscription final : public Supervised {
 public:
  using Scope = ConsumerLifecycle::Scope;

  ConsumerSubscription(WorkSpec spec, WorkHandler handler, FleetContext& context,
                       Scope scope = Scope::shared, ReplicaOptions replica = {});
  ~ConsumerSubscription() override;

  void start() override;
  void connection_changed(bool connected) override;
  void begin_shutdown() override;
  bool finish_handlers(Clock::time_point deadline) override;
  void join() override;
  bool await_handlers(Clock::time_point until) override;
  SubscriptionHealth health() const override;

 private:
  void run();
  void run_binding();
  void run_bound();
  void run_recovering();
  // An error (invalid_argument) when the connected server cannot run this spec: several filter
  // subjects before 2.10.
  Result<void> supported_by_server();
  Result<void> bind();
  Result<std::string> locate_stream();
  // Each way an existing stream differs from the work's declared_stream, logged once as a warning.
  void report_stream_differences(const nats::StreamConfig& actual);
  // Work only: answers peers asking whether a live replica knows the bound consumer, from the
  // first bind until shutdown.
  void answer_peers();
  // Whether a live replica of this work knows its consumer on `stream` (asked before a first
  // create on a stream holding messages).
  ConsumerLifecycle::Peers ask_peers(const std::string& stream);
  // Consumes `config` through a new intake; a warning when it cannot subscribe.
  void install_intake(const nats::ConsumerConfig& config);
  // What the consumer watch needs to know of this replica now.
  ConsumerWatch::Here here() const;
  // Hands back what a leader probe took; true when the watch calls for a recovery.
  bool heed(ConsumerWatch::Verdict& verdict);
  void enter_recovering(const std::string& why);
  // The consumer is missing: makes it anew after the ack floor (ConsumerLifecycle::recreate)
  // and consumes it. False, with a warning, when it could not be made.
  bool remake_consumer();
  void go_fatal(const std::string& reason);

  // Carries out `move` (fleet/supervisor_rules.h); true when the subscription left `bound`.
  bool follow(const Move& move);
  // Carries out what the pull engine signalled; false when the subscription left `bound`.
  bool act_on(const consume::PullStatus& signal);
  // A silence long enough to be a gap: acks sent again, and said (a warning unless an outage
  // explains it).
  void report_gap(uint64_t skipped);
  // The pipeline's keep-alive, at most every half tick.
  void keep_alive();
  // Sends the latest acks again: after a recovery or a leader change (DeliveryPipeline).
  void resend_recent_acks();

  // Sleeps until `d` passes or something happens (a signal, a reconnect, shutdown), keeping
  // held messages alive meanwhile.
  void wait_for(std::chrono::milliseconds d);
  bool stopping() const { return stopping_.load(); }

  const WorkSpec spec_;
  const Scope scope_;
  const ReplicaOptions replica_;
  FleetContext& ctx_;
  SubscriptionStatus status_;
  nats::JetStreamApi api_;
  // Which consumer on which stream, made right on the broker (supervisor thread only).
  ConsumerLifecycle lifecycle_;
  // Info polls, stall, stuck leader, unserved consumer (supervisor thread only).
  JetStreamWatchBroker watch_broker_;
  ConsumerWatch watch_;
  std::chrono::milliseconds tick_;

  std::thread thread_;
  std::mutex wake_mu_;
  std::condition_variable wake_;
  bool woken_ = false;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> reconnected_{false};
  // When the connection last went down or came back (steady clock ticks; 0: never).
  std::atomic<Clock::rep> link_changed_{0};

  Clock::time_point last_keep_alive_{};

  std::mutex peers_mu_;
  std::unique_ptr<nats::Subscription> peers_;  // answer_peers(); under peers_mu_
  // When the consumer last served this replica (a message or a heartbeat; clock ticks, 0:
  // never), as of the last tick: what answer_peers() tells a peer that asks. Shared with the
  // answering callback, which may outlive this.
  const std::shared_ptr<std::atomic<Clock::rep>> served_at_ =
      std::make_shared<std::atomic<Clock::rep>>(0);

  SubscriptionIntake intake_;
  ConnectionTransport transport_;
  // After the intake: destroyed first, its handler threads gone before the intake goes.
  DeliveryPipeline pipeline_;

  // Supervisor-thread state.
  std::string recovering_reason_;
  // Pulls answered "no responders" back to back wait longer each time (see run_bound).
  base::Backoff unanswered_backoff_;
  Clock::time_point unanswered_at_{};
};

}  // namespace natsfleet::fleet
