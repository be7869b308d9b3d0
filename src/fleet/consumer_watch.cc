#include "fleet/consumer_watch.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <algorithm>

#include "base/utc_time.h"
#include "consume/pull_status.h"
#include "fleet/consumer_shape.h"

namespace natsfleet::fleet {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::seconds;

ConsumerWatch::ConsumerWatch(const WorkSpec& spec, const FleetOptions& options,
                             ConsumerLifecycle& lifecycle, SubscriptionStatus& status,
                             Broker& broker, const Clock& clock)
    : spec_(spec),
      options_(options),
      lifecycle_(lifecycle),
      status_(status),
      broker_(broker),
      clock_(clock),
      stall_(options.stall_after),
      stuck_(StuckConsumerWatch::after_for(spec.flow.ack_wait)),
      unserved_(options.replace_unserved_after) {}

void ConsumerWatch::bound() {
  last_poll_ = clock_.now();
  stall_.restart(last_poll_, lifecycle_.ack_floor());
}

bool ConsumerWatch::poll_due() const { return clock_.now() - last_poll_ >= options_.info_interval; }

ConsumerWatch::Verdict ConsumerWatch::poll(const Here& here) {
  last_poll_ = clock_.now();
  if (auto retired = lifecycle_.tend_predecessor(last_poll_); !retired)
    status_.warn(retired.error().describe());
  auto info = broker_.consumer_info(lifecycle_.stream(), lifecycle_.consumer());
  if (!info) {
    if (info.error().is_consumer_not_found() || info.error().is_stream_not_found())
      return {.recover = true, .why = "consumer info: " + info.error().describe()};
    Verdict verdict = unserved(here, "its lookups go unanswered (" + info.error().describe() + ")");
    if (!verdict.recover) status_.warn("consumer info failed: " + info.error().describe());
    return verdict;
  }
  lifecycle_.saw_consumer(*info);
  status_.set_consumer_counts(info->num_pending, info->num_ack_pending, lifecycle_.ack_floor());
  const auto now = clock_.now();
  if (stuck_.observe(now, info->ack_floor_stream_seq, info->num_ack_pending, here.busy))
    move_stuck_leader(*info);
  const bool stalled = stall_.observe(now, info->ack_floor_stream_seq, here.settled,
                                      info->num_pending + info->num_ack_pending);
  if (stalled && status_.state() == SubscriptionState::bound)
    status_.set_state(SubscriptionState::stalled,
                      fmt::format("{} pending, {} awaiting ack, and no progress", info->num_pending,
                                  info->num_ack_pending));
  else if (!stalled && status_.state() == SubscriptionState::stalled)
    status_.set_state(SubscriptionState::bound, "progressing again");
  return {};
}

void ConsumerWatch::move_stuck_leader(const nats::ConsumerInfo& info) {
  const auto stuck_ms = duration_cast<milliseconds>(stuck_.after()).count();
  auto moved = broker_.step_down_leader(lifecycle_.stream(), lifecycle_.consumer());
  if (!moved) {
    // A single server has no other leader to offer: said once.
    const std::string text = fmt::format(
        "{} {}: consumer {} has {} message(s) awaiting ack and its ack floor {} "
        "has not moved for {} ms; asking its leader to step down failed: {}",
        lifecycle_.kind(), spec_.name, lifecycle_.consumer(), info.num_ack_pending,
        info.ack_floor_stream_seq, stuck_ms, moved.error().describe());
    status_.event_once("consumer", text);
    return;
  }
  status_.event(
      spdlog::level::warn, "leader-stepdown",
      "{} {}: consumer {} has {} message(s) awaiting ack, none of them here, and its ack floor {} "
      "has not moved for {} ms: asked its leader to step down, so that a new leader redelivers "
      "them (a leader that stops redelivering is a nats-server defect, fixed in 2.10.26)",
      lifecycle_.kind(), spec_.name, lifecycle_.consumer(), info.num_ack_pending,
      info.ack_floor_stream_seq, stuck_ms);
}

ConsumerWatch::Verdict ConsumerWatch::unserved(const Here& here, const std::string& evidence) {
  Verdict verdict;
  // A fleet told to exit when its consumer goes missing leaves consumers to their operator.
  if (spec_.failure.missing_consumer == OnMissing::exit) return verdict;
  const auto now = clock_.now();
  const UnservedWatch::Link link{.connected = broker_.connected(),
                                 .last_served = here.last_served,
                                 .link_changed = here.link_changed};
  if (!unserved_.evidence(now, link)) return verdict;
  const auto unserved = unserved_.unserved(now);
  if (still_served(unserved, evidence, verdict)) {
    unserved_.spare(now);
    return verdict;
  }
  delete_unserved(unserved, evidence);
  verdict.recover = true;
  verdict.why = "the consumer served nobody; deleted to make it anew";
  return verdict;
}

bool ConsumerWatch::still_served(Clock::duration unserved, const std::string& evidence,
                                 Verdict& verdict) {
  // One more look: a leader elected a moment ago answers, a consumer made lately (by a peer that
  // replaced it) is still electing its first, and a missing one is the recovery's to make.
  auto info = broker_.consumer_info(lifecycle_.stream(), lifecycle_.consumer());
  const auto made_lately = [&](const std::string& created) {
    const auto made = base::parse_rfc3339_nanos(created);
    return made && !base::older_than(*made, options_.replace_unserved_after);
  };
  if ((info && (!info->leader.empty() || made_lately(info->created))) ||
      (!info && info.error().is_consumer_not_found()))
    return true;
  // A stream that does not answer either is a broker still recovering: its consumers elect
  // their leaders after it does, so the time counts from when it answers.
  if (auto stream = broker_.stream_info(lifecycle_.stream()); !stream) return true;
  // Lookups can go unanswered while the leader serves pulls: a pull that takes nothing asks the
  // leader itself, and any answer spares the consumer.
  auto probe = broker_.probe_leader(lifecycle_.stream(), lifecycle_.consumer());
  if (!probe) {
    // This replica's link to the leader may be what fails (its server cut off from the
    // leader's): a peer the consumer served meanwhile shows it has one.
    if (!broker_.peer_served(lifecycle_.stream(), duration_cast<milliseconds>(unserved)))
      return false;
    status_.event(spdlog::level::info, "consumer-kept",
                  "{} {}: consumer {} has served nothing here for {} s ({}), but it served a "
                  "peer meanwhile: kept",
                  lifecycle_.kind(), spec_.name, lifecycle_.consumer(),
                  duration_cast<seconds>(unserved).count(), evidence);
    return true;
  }
  const int answered = probe->status;
  if (probe->status == 0 && !probe->reply.empty()) verdict.given_back = std::move(*probe);
  // Info: lookups unanswered this long while pulls are served is the broker's own trouble,
  // worth an operator's look (at most once per replace_unserved_after).
  status_.event(spdlog::level::info, "consumer-kept",
                "{} {}: consumer {} has answered no lookup for {} s ({}), but its leader answers "
                "pulls (status {}): kept",
                lifecycle_.kind(), spec_.name, lifecycle_.consumer(),
                duration_cast<seconds>(unserved).count(), evidence, answered);
  return true;
}

void ConsumerWatch::delete_unserved(Clock::duration unserved, const std::string& evidence) {
  status_.event(
      spdlog::level::warn, "consumer-unserved",
      "{} {}: consumer {} has served nothing for {} s ({}) while stream {} answers: the broker "
      "left it without a leader; deleting it to make it anew after ack floor {}",
      lifecycle_.kind(), spec_.name, lifecycle_.consumer(),
      duration_cast<seconds>(unserved).count(), evidence, lifecycle_.stream(),
      lifecycle_.ack_floor());
  // Nobody leads it to answer the delete; the recovery makes it anew at once, without
  // confirming it missing.
  if (auto deleted = broker_.delete_consumer(lifecycle_.stream(), lifecycle_.consumer()); !deleted)
    status_.event(spdlog::level::info, "consumer-deleted",
                  "{} {}: delete of consumer {} answered: {}", lifecycle_.kind(), spec_.name,
                  lifecycle_.consumer(), deleted.error().describe());
  unserved_.reset();
  deleted_ = true;
}

Result<void> JetStreamWatchBroker::delete_consumer(const std::string& stream,
                                                   const std::string& consumer) {
  nats::JetStreamApi quick(connection_, std::min(request_timeout_, milliseconds(500)));
  return quick.delete_consumer(stream, consumer);
}

Result<nats::InboundMessage> JetStreamWatchBroker::probe_leader(const std::string& stream,
                                                                const std::string& consumer) {
  return connection_.request("$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer,
                             consume::kLeaderProbeBody, request_timeout_);
}

bool JetStreamWatchBroker::peer_served(const std::string& stream, milliseconds within) {
  if (work_.empty()) return false;
  auto answer = connection_.request(peers_subject_for(stream, work_), served_question(within),
                                    std::min(request_timeout_, milliseconds(1000)));
  return answer.has_value();
}

}  // namespace natsfleet::fleet
