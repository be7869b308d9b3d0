#include "fleet/consumer_subscription.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <thread>
#include <utility>

#include "base/backoff.h"
#include "base/log_event.h"
#include "consume/ack_metadata.h"
#include "fleet/consumer_shape.h"
#include "fleet/stream_declaration.h"
#include "fleet/supervisor_rules.h"
#include "nats/connection.h"
#include "nats/jetstream_api.h"

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;

std::string random_suffix() {
  std::random_device device;
  std::uniform_int_distribution<uint32_t> digits;
  return fmt::format("{:08x}", digits(device));
}

ConsumerLifecycle::Options lifecycle_options(const WorkSpec& spec, ConsumerLifecycle::Scope scope,
                                             const ReplicaOptions& replica,
                                             const FleetOptions& fleet) {
  ConsumerLifecycle::Options options;
  options.scope = scope;
  // A replica's own consumer: a name no other replica (nor a restart of this one) picks.
  if (scope == ConsumerLifecycle::Scope::per_replica)
    options.replica_consumer = spec.name + "-" + random_suffix();
  options.last_per_subject = replica.last_per_subject;
  options.retire_grace = fleet.retire_grace;
  options.broadcast_inactive = fleet.broadcast_inactive;
  options.missing_lookups = fleet.missing_lookups;
  options.missing_window = fleet.missing_window;
  // What the bound replicas take to see the consumer gone (a 409 at once, or two missed
  // heartbeats) and confirm it (missing_window), with a heartbeat to spare.
  options.first_create_wait = fleet.missing_window + heartbeat_of(spec);
  return options;
}

}  // namespace

ConsumerSubscription::ConsumerSubscription(WorkSpec spec, WorkHandler handler,
                                           FleetContext& context, Scope scope,
                                           ReplicaOptions replica)
    : spec_(std::move(spec)),
      scope_(scope),
      replica_(std::move(replica)),
      ctx_(context),
      status_(spec_.name, scope == Scope::shared ? "work" : "broadcast",
              describe_subjects(filter_subjects(spec_)), context.log),
      api_(*context.connection, context.options.request_timeout),
      lifecycle_(spec_, lifecycle_options(spec_, scope, replica_, context.options), api_,
                 context.log),
      watch_broker_(*context.connection, api_, context.options.request_timeout,
                    scope == Scope::shared ? spec_.name : std::string()),
      watch_(spec_, ctx_.options, lifecycle_, status_, watch_broker_, *context.clock),
      // Often enough to see a missed heartbeat, and to keep held messages' in-progress acks
      // (every ack_wait / 3) well inside ack_wait.
      tick_(std::clamp(std::min(heartbeat_of(spec_), spec_.flow.ack_wait) / 4, milliseconds(25),
                       milliseconds(500))),
      intake_(context,
              [this] {
                std::lock_guard lock(wake_mu_);
                woken_ = true;
                wake_.notify_all();
              }),
      transport_(*context.connection),
      pipeline_(spec_, std::move(handler), status_, transport_, intake_, *context.clock),
      unanswered_backoff_(context.options.bind_backoff_min, context.options.bind_backoff_max) {}

ConsumerSubscription::~ConsumerSubscription() {
  begin_shutdown();
  finish_handlers(ctx_.clock->now());
  join();
  pipeline_.join();
}

bool ConsumerSubscription::await_handlers(Clock::time_point until) {
  return pipeline_.await_idle(until);
}

void ConsumerSubscription::start() {
  thread_ = std::thread([this] { run(); });
}

void ConsumerSubscription::connection_changed(bool connected) {
  link_changed_ = ctx_.clock->now().time_since_epoch().count();
  pipeline_.connection_changed(connected);
  if (connected) reconnected_ = true;
  std::lock_guard lock(wake_mu_);
  woken_ = true;
  wake_.notify_all();
}

void ConsumerSubscription::begin_shutdown() {
  stopping_ = true;
  pipeline_.request_stop();
  {
    std::lock_guard lock(wake_mu_);
    woken_ = true;
    wake_.notify_all();
  }
  // Keep the inbox: what the broker still sends for earlier pulls is nak'd back below rather
  // than dropped (it would wait out ack_wait).
  intake_.stop_pulling();
  std::lock_guard lock(peers_mu_);
  peers_.reset();  // a replica leaving knows the consumer no more
}

bool ConsumerSubscription::finish_handlers(Clock::time_point deadline) {
  auto left = [&] {
    return std::max(std::chrono::duration_cast<milliseconds>(deadline - ctx_.clock->now()),
                    milliseconds(0));
  };
  // Buffered and held messages go back at once rather than after ack_wait.
  const bool done = pipeline_.stop(left());
  if (!done) status_.warn("a handler was still running at the shutdown deadline");
  // Messages the broker sent for pulls made before the stop arrive shortly (with a backlog, at
  // once): read them here (the handler threads read no more) and give them back too, for a
  // moment. Then the inbox goes.
  const auto grace_end = ctx_.clock->now() + std::min(left(), milliseconds(250));
  for (;;) {
    intake_.drain();
    if (ctx_.clock->now() >= grace_end || intake_.outstanding() <= 0) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  intake_.stop();
  return done;
}

void ConsumerSubscription::join() {
  if (thread_.joinable()) thread_.join();
  if (status_.state() != SubscriptionState::fatal) status_.set_state(SubscriptionState::stopped);
}

SubscriptionHealth ConsumerSubscription::health() const { return status_.snapshot(); }

void ConsumerSubscription::wait_for(milliseconds d) {
  const auto until = ctx_.clock->now() + d;
  for (;;) {
    keep_alive();
    std::unique_lock lock(wake_mu_);
    const auto now = ctx_.clock->now();
    const bool woken =
        wake_.wait_until(lock, std::min(until, now + tick_), [&] { return woken_ || stopping(); });
    if (woken || ctx_.clock->now() >= until) {
      woken_ = false;
      return;
    }
  }
}

void ConsumerSubscription::keep_alive() {
  const auto now = ctx_.clock->now();
  // Called on every wait: a scan per half tick is plenty for a third of ack_wait.
  if (now - last_keep_alive_ < tick_ / 2) return;
  last_keep_alive_ = now;
  intake_.drain();  // what waits while every handler thread is busy gets stamped and kept alive
  pipeline_.keep_alive(now);
}

void ConsumerSubscription::run() {
  while (!stopping()) {
    switch (status_.state()) {
      case SubscriptionState::binding:
        run_binding();
        break;
      case SubscriptionState::bound:
      case SubscriptionState::stalled:
        run_bound();
        break;
      case SubscriptionState::recovering:
        run_recovering();
        break;
      case SubscriptionState::fatal:
      case SubscriptionState::stopped:
        wait_for(milliseconds(1000));
        break;
    }
  }
}

void ConsumerSubscription::run_binding() {
  base::Backoff backoff(ctx_.options.bind_backoff_min, ctx_.options.bind_backoff_max);
  while (!stopping()) {
    if (!ctx_.connection->connected()) {
      status_.warn("waiting for the broker");
      wait_for(tick_);
      continue;
    }
    if (auto supported = supported_by_server(); !supported) {
      go_fatal(supported.error().message);
      return;
    }
    auto bound = bind();
    if (bound) {
      status_.set_state(SubscriptionState::bound);
      return;
    }
    status_.warn(bound.error().describe() + "; retrying");
    wait_for(backoff.next());
  }
}

Result<void> ConsumerSubscription::supported_by_server() {
  if (spec_.subjects.size() < 2) return {};
  auto version = ctx_.connection->server_version();
  if (!version) {
    // Unknown (a server that speaks TLS first, say): the create's answer tells (create_or_read).
    status_.event_once("consumer", "work " + spec_.name + ": cannot read the server's version (" +
                                       version.error().describe() +
                                       "); several filter subjects need 2.10 or newer");
    return {};
  }
  if (version->at_least(2, 10)) return {};
  return Error{Errc::invalid_argument,
               fmt::format("work {} filters several subjects ({}), which needs nats-server 2.10 "
                           "or newer; the server it is connected to runs {}: upgrade it, or "
                           "split the work into one per subject",
                           spec_.name, describe_subjects(spec_.subjects), version->text)};
}

Result<void> ConsumerSubscription::bind() {
  auto stream = locate_stream();
  if (!stream) return stream.error();
  if (!spec_.failure.dead_letter.empty()) {
    // Checked before consuming: a terminated message must have somewhere to go.
    auto holder = api_.find_stream(spec_.failure.dead_letter);
    if (!holder) {
      if (holder.error().code == Errc::no_stream_for_subject)
        return Result<void>(Errc::no_stream_for_subject,
                            "dead_letter subject " + spec_.failure.dead_letter +
                                " is held by no stream: create one that holds it (natsfleet "
                                "creates it only on its embedded broker)");
      return holder.error();
    }
  }
  // The whole wait: a reconnect or a signal meanwhile must not cut it short.
  auto info = lifecycle_.bind(
      *stream, pipeline_.last_handled_seq(),
      [this](milliseconds d) {
        for (const auto until = ctx_.clock->now() + d; !stopping() && ctx_.clock->now() < until;)
          wait_for(std::chrono::duration_cast<milliseconds>(until - ctx_.clock->now()) +
                   milliseconds(1));
        return !stopping();
      },
      [this](const std::string& on) { return ask_peers(on); });
  if (!info) return info.error();
  if (scope_ == Scope::shared) answer_peers();

  watch_.bound();
  status_.set_location(lifecycle_.stream(), lifecycle_.consumer());
  status_.set_consumer_counts(info->num_pending, info->num_ack_pending, lifecycle_.ack_floor());
  install_intake(info->config);
  return {};
}

void ConsumerSubscription::answer_peers() {
  {
    std::lock_guard lock(peers_mu_);
    if (peers_ || stopping()) return;
    // "Do you know it?" is answered by every bound replica; "did it serve you within ...?"
    // only by one it served.
    auto answer = [connection = ctx_.connection, clock = ctx_.clock,
                   served_at = served_at_](nats::InboundMessage&& asked) {
      if (asked.reply.empty()) return;
      const auto window = served_window(asked.data);
      if (!window) {
        (void)connection->publish(asked.reply, "bound");
        return;
      }
      const Clock::time_point served{Clock::duration(served_at->load())};
      if (served != Clock::time_point{} && clock->now() - served <= *window)
        (void)connection->publish(asked.reply, "served");
    };
    auto subscribed = ctx_.connection->subscribe(peers_subject_for(lifecycle_.stream(), spec_.name),
                                                 "peers", std::move(answer));
    if (!subscribed) {
      status_.warn("cannot answer peers: " + subscribed.error().describe());
      return;
    }
    peers_ = std::move(*subscribed);
  }
  // Once the broker has the interest a peer that asks is answered: before this replica says
  // it is bound, not some moment after.
  if (auto flushed = ctx_.connection->flush(ctx_.options.request_timeout); !flushed)
    status_.warn("cannot answer peers yet: " + flushed.error().describe());
}

ConsumerLifecycle::Peers ConsumerSubscription::ask_peers(const std::string& stream) {
  using Peers = ConsumerLifecycle::Peers;
  auto answer =
      ctx_.connection->request(peers_subject_for(stream, spec_.name), "",
                               std::min(ctx_.options.request_timeout, milliseconds(1000)));
  if (answer) return Peers::someone;
  return answer.error().code == Errc::no_responders ? Peers::nobody : Peers::unknown;
}

Result<std::string> ConsumerSubscription::locate_stream() {
  if (replica_.stream_to_create) {
    auto existing = api_.stream_info(spec_.stream);
    if (existing) {
      report_stream_differences(existing->config);
      return spec_.stream;
    }
    if (!existing.error().is_stream_not_found()) return existing.error();
    // Two replicas may create it at the same moment: the loser's create is refused ("subjects
    // overlap") and the stream is there.
    auto created = api_.create_stream(*replica_.stream_to_create);
    if (!created) {
      if (api_.stream_info(spec_.stream)) return spec_.stream;
      return created.error();
    }
    status_.event_once("consumer",
                       fmt::format("{} {}: created stream {} for subject {}", lifecycle_.kind(),
                                   spec_.name, spec_.stream, spec_.subject));
    return spec_.stream;
  }
  if (!spec_.stream.empty()) return spec_.stream;
  // The subject decides the stream, whatever the service or its own streams are called.
  return api_.find_stream(spec_.subject);
}

void ConsumerSubscription::report_stream_differences(const nats::StreamConfig& actual) {
  if (!spec_.declared_stream) return;
  const auto differences = stream_differences(*spec_.declared_stream, actual);
  if (differences.empty()) return;
  status_.event_once(
      "stream-differs",
      fmt::format("{} {}: stream {} differs from its declaration and is left as it "
                  "is: {}",
                  lifecycle_.kind(), spec_.name, spec_.stream, fmt::join(differences, "; ")),
      spdlog::level::warn);
}

void ConsumerSubscription::install_intake(const nats::ConsumerConfig& config) {
  watch_.forget_unserved();  // a consumer just bound has had no chance to serve yet
  if (auto installed =
          intake_.install(config, lifecycle_.stream(), lifecycle_.consumer(), spec_, pipeline_);
      !installed)
    status_.warn("cannot subscribe: " + installed.error().describe());
}

void ConsumerSubscription::run_bound() {
  wait_for(tick_);
  if (stopping()) return;
  const std::optional<consume::PullStatus> signal = intake_.take_signal();
  const bool connected = ctx_.connection->connected();
  if (follow(after_link(connected, connected && reconnected_.exchange(false)))) return;
  if (signal && !act_on(*signal)) return;
  const SubscriptionIntake::Check intake = intake_.check();
  if (intake.running && intake.new_gap)
    report_gap(intake.stale_dropped + pipeline_.stale_skipped());
  if (follow(after_intake(intake.running, intake.missed_heartbeats))) return;
  pipeline_.tend_held(ctx_.clock->now());
  served_at_->store(intake_.last_served().time_since_epoch().count());
  if (watch_.poll_due())
    if (auto verdict = watch_.poll(here()); heed(verdict)) enter_recovering(verdict.why);
}

bool ConsumerSubscription::follow(const Move& move) {
  switch (move.kind) {
    case Move::stay:
      return false;
    case Move::recover:
      enter_recovering(move.why);
      return true;
    case Move::rebind:
      status_.set_state(SubscriptionState::binding, move.why);
      return true;
    case Move::fatal:
      go_fatal(move.why);
      return true;
  }
  return false;
}

ConsumerWatch::Here ConsumerSubscription::here() const {
  return {.busy = pipeline_.busy(),
          .settled = status_.counters.acked.load() + status_.counters.termed.load(),
          .last_served = intake_.last_served(),
          .link_changed = Clock::time_point{Clock::duration(link_changed_.load())}};
}

bool ConsumerSubscription::heed(ConsumerWatch::Verdict& verdict) {
  if (verdict.given_back) pipeline_.give_back(std::move(*verdict.given_back));
  return verdict.recover;
}

bool ConsumerSubscription::act_on(const consume::PullStatus& signal) {
  const SignalAction action = on_pull_status(signal);
  if (action.back_off) {
    // Pulls refused back to back wait longer each time.
    const auto now = ctx_.clock->now();
    if (now - unanswered_at_ > 2 * ctx_.options.bind_backoff_max) unanswered_backoff_.reset();
    const auto until = now + unanswered_backoff_.next();
    while (!stopping() && ctx_.clock->now() < until)
      wait_for(std::chrono::duration_cast<milliseconds>(until - ctx_.clock->now()));
    unanswered_at_ = ctx_.clock->now();
    if (stopping()) return false;
    auto verdict = watch_.unserved(here(), "its pulls find no responder");
    enter_recovering(heed(verdict) ? verdict.why : action.move.why);
    return false;
  }
  if (action.resend_acks) resend_recent_acks();
  if (action.restart_pulls) intake_.restart_pulls();
  return !follow(action.move);
}

void ConsumerSubscription::report_gap(uint64_t skipped) {
  resend_recent_acks();  // the silence may have been a leader moving
  // A connection that went down or came back within the silence explains it: no warning.
  const Clock::time_point link_changed{Clock::duration(link_changed_.load())};
  if (ctx_.clock->now() - link_changed <= 2 * pipeline_.stale_after())
    base::log_event(*ctx_.log, spdlog::level::info,
                    {{"work", spec_.name}, {"event", "gap-after-outage"}},
                    "work {}: deliveries sent before the connection came back are skipped; the "
                    "broker redelivers them ({} so far)",
                    spec_.name, skipped);
  else
    status_.warn(
        fmt::format("nothing arrived for {} ms or more (this process was paused or its link cut): "
                    "deliveries sent before are skipped, the broker redelivers them ({} so far)",
                    pipeline_.stale_after().count(), skipped));
}

void ConsumerSubscription::enter_recovering(const std::string& why) {
  recovering_reason_ = why;
  status_.set_state(SubscriptionState::recovering, why);
}

void ConsumerSubscription::run_recovering() {
  base::Backoff backoff(ctx_.options.bind_backoff_min, ctx_.options.bind_backoff_max);
  while (!stopping()) {
    if (!ctx_.connection->connected()) {
      status_.warn("broker unreachable; waiting for the reconnect");
      wait_for(tick_);
      continue;
    }
    reconnected_ = false;
    using Lookup = ConsumerLifecycle::Lookup;
    // Deleted here a moment ago: missing, no need to confirm it (a create that finds it still
    // there fails, and the next round looks).
    const auto found = watch_.take_deleted()
                           ? ConsumerLifecycle::Found{.lookup = Lookup::consumer_missing}
                           : lifecycle_.confirm([this](milliseconds d) {
                               wait_for(d);
                               return !stopping();
                             });
    const RecoveryAction action = after_lookup(found.lookup, spec_.failure.missing_consumer,
                                               lifecycle_.stream(), lifecycle_.consumer());
    switch (action.kind) {
      case RecoveryAction::pull_again:
        // Acks first: a new consumer leader that lags the old one delivers from where its state
        // ends, and an ack that reaches it before the pull moves it past what was handled.
        resend_recent_acks();
        if (!intake_.restart_pulls()) {
          status_.set_state(SubscriptionState::binding, "re-binding");
          return;
        }
        break;
      case RecoveryAction::retry:
        if (auto verdict = watch_.unserved(
                here(), "its lookups go unanswered (" + found.error.describe() + ")");
            heed(verdict))
          continue;
        status_.warn("consumer lookup failed (" + found.error.describe() +
                     "); the broker may be down or paused; retrying");
        wait_for(backoff.next());
        continue;
      case RecoveryAction::fatal:
        go_fatal(action.why);
        return;
      case RecoveryAction::remake:
        if (!remake_consumer()) {
          wait_for(backoff.next());
          continue;
        }
        status_.counters.recoveries++;
        break;
    }
    intake_.clear_signal();  // settled by this recovery
    watch_.bound();
    status_.set_state(SubscriptionState::bound, "recovered after: " + recovering_reason_);
    return;
  }
}

bool ConsumerSubscription::remake_consumer() {
  watch_.forget_unserved();  // whatever is found from now on is a new consumer
  auto made = lifecycle_.recreate(pipeline_.last_handled_seq());
  if (!made) {
    status_.warn("cannot recreate consumer " + lifecycle_.consumer() + ": " +
                 made.error().describe());
    return false;
  }
  // A push-queue consumer recreated by a peer may deliver elsewhere: follow it.
  if (!intake_.restart_if_serving(made->config)) install_intake(made->config);
  return true;
}

void ConsumerSubscription::go_fatal(const std::string& reason) {
  status_.set_state(SubscriptionState::fatal, reason);
  intake_.stop();
  ctx_.fatal(spec_.name, reason);
}

void ConsumerSubscription::resend_recent_acks() {
  pipeline_.resend_recent_acks(std::min(spec_.flow.ack_wait / 4, ctx_.options.request_timeout));
}

}  // namespace natsfleet::fleet
