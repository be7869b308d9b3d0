// A bound work consumer watched from its supervisor's thread: its info polled every
// info_interval (counts for /status, a stall, a leader that stopped redelivering asked to step
// down) and, on evidence that nobody serves it, the decision to delete it so that the recovery
// makes it anew (docs/design/recovery.md). The broker is an interface: in service the fleet's
// connection, in unit tests a script.
//
//   ConsumerWatch watch(spec, options, lifecycle, status, broker, clock);
//   watch.bound();                                    // after each bind or recovery
//   if (watch.poll_due()) if (auto v = watch.poll(here); v.recover) recover(v.why);
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "base/clock.h"
#include "fleet/consumer_lifecycle.h"
#include "fleet/consumer_watches.h"
#include "fleet/subscription_status.h"
#include "nats/connection.h"
#include "nats/consumer_config.h"
#include "nats/jetstream_api.h"
#include "nats/stream_config.h"
#include "natsfleet/fleet.h"

namespace natsfleet::fleet {

class ConsumerWatch {
 public:
  using Clock = base::Clock;

  // What the watch asks of the broker.
  class Broker {
   public:
    virtual ~Broker() = default;
    virtual bool connected() const = 0;
    virtual Result<nats::ConsumerInfo> consumer_info(const std::string& stream,
                                                     const std::string& consumer) = 0;
    virtual Result<nats::StreamInfo> stream_info(const std::string& stream) = 0;
    virtual Result<void> step_down_leader(const std::string& stream,
                                          const std::string& consumer) = 0;
    // Waits briefly for the answer: nobody may lead the consumer to give one.
    virtual Result<void> delete_consumer(const std::string& stream,
                                         const std::string& consumer) = 0;
    // A pull that asks the leader itself and takes at most one message (consume::
    // kLeaderProbeBody): its answer, or an error when nobody answered.
    virtual Result<nats::InboundMessage> probe_leader(const std::string& stream,
                                                      const std::string& consumer) = 0;
    // Whether another replica bound to the work's consumer on `stream` was served by it (a
    // message or a heartbeat) within `within`: its leader serves, only not this replica.
    virtual bool peer_served(const std::string& stream, std::chrono::milliseconds within) = 0;
  };

  // What this replica knows at the moment of a poll or a piece of evidence.
  struct Here {
    bool busy = false;                 // waiting on or handling messages of the consumer
    uint64_t settled = 0;              // messages acked or termed here so far
    Clock::time_point last_served{};   // the intake's last message or heartbeat
    Clock::time_point link_changed{};  // the connection last went down or came back
  };
  // What the supervisor does next: go on, or recover (`why`). `given_back`: a message a leader
  // probe took, to hand back to the broker.
  struct Verdict {
    bool recover = false;
    std::string why;
    std::optional<nats::InboundMessage> given_back;
  };

  ConsumerWatch(const WorkSpec& spec, const FleetOptions& options, ConsumerLifecycle& lifecycle,
                SubscriptionStatus& status, Broker& broker, const Clock& clock);

  // The consumer was bound or recovered now: a poll is due after info_interval and a stall
  // counts from here.
  void bound();
  // A consumer just installed or made anew has had no chance to serve yet: no evidence counts.
  void forget_unserved() { unserved_.reset(); }
  bool poll_due() const;
  // One info poll: counts, stall, stuck leader; a consumer or stream reported missing, or one
  // unserved long enough (then deleted), is a recovery.
  Verdict poll(const Here& here);
  // Evidence that nobody serves the consumer (a pull refused for want of a responder, a lookup
  // unanswered): once it has lasted replace_unserved_after with nothing served and the stream
  // answers, the consumer is deleted (recover: the recovery makes it anew without a lookup).
  Verdict unserved(const Here& here, const std::string& evidence);
  // True once after unserved() deleted the consumer.
  bool take_deleted() { return std::exchange(deleted_, false); }

 private:
  // A last look before deleting: a leader, a consumer made lately, a stream that does not
  // answer yet, a leader that answers a pull, or a peer it served meanwhile spares it.
  bool still_served(Clock::duration unserved, const std::string& evidence, Verdict& verdict);
  void delete_unserved(Clock::duration unserved, const std::string& evidence);
  void move_stuck_leader(const nats::ConsumerInfo& info);

  const WorkSpec& spec_;
  const FleetOptions& options_;
  ConsumerLifecycle& lifecycle_;
  SubscriptionStatus& status_;
  Broker& broker_;
  const Clock& clock_;
  StallWatch stall_;
  StuckConsumerWatch stuck_;
  UnservedWatch unserved_;
  Clock::time_point last_poll_{};
  bool deleted_ = false;
};

// The Broker of a running fleet: its connection and JetStream API. `work`: the shared work whose
// peers are asked (peers_subject_for); empty for a consumer no peer shares.
class JetStreamWatchBroker final : public ConsumerWatch::Broker {
 public:
  JetStreamWatchBroker(nats::Connection& connection, nats::JetStreamApi& api,
                       std::chrono::milliseconds request_timeout, std::string work = {})
      : connection_(connection),
        api_(api),
        request_timeout_(request_timeout),
        work_(std::move(work)) {}
  bool connected() const override { return connection_.connected(); }
  Result<nats::ConsumerInfo> consumer_info(const std::string& stream,
                                           const std::string& consumer) override {
    return api_.consumer_info(stream, consumer);
  }
  Result<nats::StreamInfo> stream_info(const std::string& stream) override {
    return api_.stream_info(stream);
  }
  Result<void> step_down_leader(const std::string& stream, const std::string& consumer) override {
    return api_.step_down_consumer_leader(stream, consumer);
  }
  Result<void> delete_consumer(const std::string& stream, const std::string& consumer) override;
  Result<nats::InboundMessage> probe_leader(const std::string& stream,
                                            const std::string& consumer) override;
  bool peer_served(const std::string& stream, std::chrono::milliseconds within) override;

 private:
  nats::Connection& connection_;
  nats::JetStreamApi& api_;
  const std::chrono::milliseconds request_timeout_;
  const std::string work_;
};

}  // namespace natsfleet::fleet
