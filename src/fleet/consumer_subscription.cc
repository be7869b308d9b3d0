#include "fleet/consumer_subscription.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <thread>
#include <utility>

#include "base/backoff.h"
#include "base/log_event.h"
#include "base/utc_time.h"
#include "consume/ack_metadata.h"
#include "consume/pull_engine.h"
#include "consume/queue_intake.h"
#include "fleet/consumer_shape.h"
#include "fleet/dead_letter_copy.h"
#include "fleet/delivery_control.h"
#include "nats/connection.h"
#include "nats/jetstream_api.h"

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;

// A window is at most this many messages, and at most this many bytes of them (by the average
// size seen): what a replica holds for one subscription stays bounded whatever the payloads.
constexpr int kMaxWindow = 1000;
constexpr int64_t kMaxWindowBytes = 32 * 1024 * 1024;

std::string random_suffix() {
  std::random_device device;
  std::uniform_int_distribution<uint32_t> digits;
  return fmt::format("{:08x}", digits(device));
}

// A rejected message's nak delay: nak_backoff_min doubling with each delivery, up to the max.
milliseconds nak_delay(const WorkSpec& spec, uint64_t delivered) {
  return base::exponential_delay(spec.nak_backoff_min, spec.nak_backoff_max,
                                 delivered > 0 ? delivered - 1 : 0);
}

// "stream sequence S (delivery D, consumer sequence C)", for debug lines.
std::string describe_delivery(const std::string& reply) {
  auto d = consume::parse_ack_subject(reply);
  if (!d) return "a message";
  return fmt::format("stream sequence {} (delivery {}, consumer sequence {})", d->stream_seq,
                     d->delivered, d->consumer_seq);
}

// A debug line about one delivery, its stream, sequences and delivery count as log fields.
template <typename... Args>
void log_delivery(spdlog::logger& log, const std::string& work, std::string_view event,
                  const std::string& reply, spdlog::format_string_t<Args...> format,
                  Args&&... args) {
  if (!log.should_log(spdlog::level::debug)) return;
  base::LogScope scope({{"work", work}, {"event", event}});
  std::optional<base::LogScope> sequences;
  if (auto d = consume::parse_ack_subject(reply))
    sequences.emplace(std::initializer_list<base::LogField>{{"stream", d->stream},
                                                            {"stream_seq", d->stream_seq},
                                                            {"consumer_seq", d->consumer_seq},
                                                            {"delivered", d->delivered}});
  log.debug(format, std::forward<Args>(args)...);
}

// How long a dead letter may take to be stored before the message is nak'd instead.
constexpr milliseconds kDeadLetterTimeout{5000};

DownstreamGate::Options gate_options(const WorkSpec& spec) {
  DownstreamGate::Options options;
  options.retry_min = spec.retry_min;
  options.retry_max = spec.retry_max;
  options.in_progress_every = std::max(spec.ack_wait / 3, milliseconds(100));
  return options;
}

// The first window: small, so slow handlers never sit on a large buffer; it grows once the
// handlers prove fast (see adapt_window).
int initial_window(const WorkSpec& spec) {
  if (spec.batch > 0) return spec.batch;
  return std::min({spec.concurrency * 4, kMaxWindow, spec.max_ack_pending});
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
  options.first_create_wait = fleet.missing_window + spec.heartbeat;
  return options;
}

}  // namespace

ConsumerSubscription::ConsumerSubscription(WorkSpec spec, WorkHandler handler,
                                           FleetContext& context, Scope scope,
                                           ReplicaOptions replica)
    : spec_(std::move(spec)),
      handler_(std::move(handler)),
      scope_(scope),
      replica_(std::move(replica)),
      ctx_(context),
      status_(spec_.name, scope == Scope::shared ? "work" : "broadcast",
              describe_subjects(filter_subjects(spec_)), context.log),
      api_(*context.connection, context.options.request_timeout),
      lifecycle_(spec_, lifecycle_options(spec_, scope, replica_, context.options), api_,
                 context.log),
      // Often enough to see a missed heartbeat, and to keep held messages' in-progress acks
      // (every ack_wait / 3) well inside ack_wait.
      tick_(std::clamp(std::min(spec_.heartbeat, spec_.ack_wait) / 4, milliseconds(25),
                       milliseconds(500))),
      in_progress_(std::make_shared<DeliveryControl>(*context.connection)),
      // A third: the supervisor's tick (at most a quarter) and a slow API call still fit before
      // ack_wait runs out.
      keep_alive_every_(spec_.ack_wait / 3),
      gate_(gate_options(spec_)),
      unanswered_backoff_(context.options.bind_backoff_min, context.options.bind_backoff_max) {
  consume::Dispatcher::Options options;
  options.concurrency = spec_.concurrency;
  // A redelivery of a message still waiting (push: the broker resent it after ack_wait)
  // replaces it: the same stream sequence.
  options.key = [](const nats::InboundMessage& m) {
    auto d = consume::parse_ack_subject(m.reply);
    return d ? std::to_string(d->stream_seq) : std::string();
  };
  dispatcher_ = std::make_unique<consume::Dispatcher>(
      std::move(options),
      [this](nats::InboundMessage&& m, bool probe) { process(std::move(m), probe); });
  // The pull engine's gap: half of ack_wait, at least three heartbeats.
  stale_after_ = std::max(spec_.ack_wait / 2, spec_.heartbeat * 3);
}

ConsumerSubscription::~ConsumerSubscription() {
  begin_shutdown();
  finish_handlers(Clock::now());
  join();
  wait_handlers();
  in_progress_->detach();  // a Message a handler kept may outlive this and the connection
}

void ConsumerSubscription::wait_handlers() { dispatcher_->join(); }

void ConsumerSubscription::start() {
  thread_ = std::thread([this] { run(); });
}

void ConsumerSubscription::connection_changed(bool connected) {
  link_changed_ = Clock::now().time_since_epoch().count();
  if (connected) reconnected_ = true;
  std::lock_guard lock(wake_mu_);
  woken_ = true;
  wake_.notify_all();
}

void ConsumerSubscription::begin_shutdown() {
  stopping_ = true;
  {
    std::lock_guard lock(wake_mu_);
    woken_ = true;
    wake_.notify_all();
  }
  // Keep the inbox: what the broker still sends for earlier pulls is nak'd back below rather
  // than dropped (it would wait out ack_wait).
  std::lock_guard lock(engine_mu_);
  if (engine_) engine_->stop_pulling();
}

Message ConsumerSubscription::as_message(nats::InboundMessage& in) const {
  auto delivery = consume::parse_ack_subject(in.reply);
  return Message(std::move(in.subject), std::move(in.data), std::move(in.headers),
                 std::move(delivery), in.reply, in_progress_);
}

void ConsumerSubscription::give_back(nats::InboundMessage&& m) {
  log_delivery(*ctx_.log, spec_.name, "given-back", m.reply, "work {}: gave back {}", spec_.name,
               describe_delivery(m.reply));
  send_ack(m.reply, consume::nak_body(milliseconds(0)));
  status_.counters.naked++;
}

bool ConsumerSubscription::finish_handlers(Clock::time_point deadline) {
  auto left = [&] {
    return std::max(std::chrono::duration_cast<milliseconds>(deadline - Clock::now()),
                    milliseconds(0));
  };
  // Buffered messages that never started go back at once rather than after ack_wait.
  bool done =
      dispatcher_->stop(left(), [this](nats::InboundMessage&& m) { give_back(std::move(m)); });
  if (!done) status_.warn("a handler was still running at the shutdown deadline");
  // Held for a downstream outage: another replica (or this one, restarted) tries them.
  for (auto& m : gate_.take_all()) give_back(std::move(m));
  // Messages the broker sent for pulls made before the stop arrive shortly (with a backlog, at
  // once): wait a moment for them and give them back too. Then the inbox goes.
  const auto grace_end = Clock::now() + std::min(left(), milliseconds(250));
  while (Clock::now() < grace_end) {
    {
      std::lock_guard lock(engine_mu_);
      if (!engine_ || engine_->outstanding() == 0) break;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  std::lock_guard lock(engine_mu_);
  if (engine_) engine_->stop();
  return done;
}

void ConsumerSubscription::join() {
  if (thread_.joinable()) thread_.join();
  if (status_.state() != SubscriptionState::fatal) status_.set_state(SubscriptionState::stopped);
}

SubscriptionHealth ConsumerSubscription::health() const { return status_.snapshot(); }

void ConsumerSubscription::wait_for(milliseconds d) {
  const auto until = Clock::now() + d;
  for (;;) {
    keep_alive();
    std::unique_lock lock(wake_mu_);
    const auto now = Clock::now();
    const bool woken =
        wake_.wait_until(lock, std::min(until, now + tick_), [&] { return woken_ || stopping(); });
    if (woken || Clock::now() >= until) {
      woken_ = false;
      return;
    }
  }
}

void ConsumerSubscription::keep_alive() {
  if (spec_.keep_alive_limit <= milliseconds(0)) return;
  const auto now = Clock::now();
  // Called on every wait: a scan per half tick is plenty for a third of ack_wait.
  if (now - last_keep_alive_ < tick_ / 2) return;
  last_keep_alive_ = now;
  auto kept = dispatcher_->keep_alive(
      now, keep_alive_every_, spec_.keep_alive_limit,
      stale_after_ > milliseconds(0) ? Clock::duration(stale_after_) : Clock::duration::max());
  for (const auto& reply : kept.due) send_ack(reply, consume::kInProgressBody);
  status_.counters.kept_alive += kept.due.size();
  const auto limit_ms = spec_.keep_alive_limit.count();
  if (!kept.expired.empty())
    status_.event(
        spdlog::level::warn, "keep-alive-limit",
        "work {}: {} message(s) waited over {} ms (keep_alive_limit) for a handler; gave them "
        "back for another replica",
        spec_.name, kept.expired.size(), limit_ms);
  for (auto& m : kept.expired) {
    give_back(std::move(m));
    std::lock_guard lock(engine_mu_);
    if (engine_) engine_->message_done();
  }
  for (const auto& reply : kept.overran) {
    auto d = consume::parse_ack_subject(reply);
    status_.event(
        spdlog::level::warn, "keep-alive-limit",
        "work {}: a handler has run over {} ms (keep_alive_limit) on {}; its message gets no "
        "more in-progress acks, so the broker redelivers it after ack_wait",
        spec_.name, limit_ms,
        d ? fmt::format("{} sequence {}", d->stream, d->stream_seq) : std::string("a message"));
  }
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
    if (auto refused = unsupported_by_server(); !refused.empty()) {
      go_fatal(refused);
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

std::string ConsumerSubscription::unsupported_by_server() {
  if (spec_.subjects.size() < 2) return {};
  auto version = ctx_.connection->server_version();
  if (!version) {
    // Unknown (a server that speaks TLS first, say): the create's answer tells (create_or_read).
    log_once("work " + spec_.name + ": cannot read the server's version (" +
             version.error().describe() + "); several filter subjects need 2.10 or newer");
    return {};
  }
  if (version->at_least(2, 10)) return {};
  return fmt::format(
      "work {} filters several subjects ({}), which needs nats-server 2.10 or newer; the server "
      "it is connected to runs {}: upgrade it, or split the work into one per subject",
      spec_.name, describe_subjects(spec_.subjects), version->text);
}

Result<void> ConsumerSubscription::bind() {
  auto stream = locate_stream();
  if (!stream) return stream.error();
  if (!spec_.dead_letter.empty()) {
    // Checked before consuming: a terminated message must have somewhere to go.
    auto holder = api_.find_stream(spec_.dead_letter);
    if (!holder) {
      if (holder.error().code == Errc::no_stream_for_subject)
        return Result<void>(Errc::no_stream_for_subject,
                            "dead_letter subject " + spec_.dead_letter +
                                " is held by no stream: create one that holds it (natsfleet "
                                "creates it only on its embedded broker)");
      return holder.error();
    }
  }
  // The whole wait: a reconnect or a signal meanwhile must not cut it short.
  auto info = lifecycle_.bind(*stream, last_handled_seq_.load(), [this](milliseconds d) {
    for (const auto until = Clock::now() + d; !stopping() && Clock::now() < until;)
      wait_for(std::chrono::duration_cast<milliseconds>(until - Clock::now()) + milliseconds(1));
    return !stopping();
  });
  if (!info) return info.error();

  last_floor_seen_ = lifecycle_.ack_floor();
  last_info_ = last_progress_ = Clock::now();
  status_.set_location(lifecycle_.stream(), lifecycle_.consumer());
  status_.set_consumer_counts(info->num_pending, info->num_ack_pending, lifecycle_.ack_floor());
  install_intake(info->config);
  return {};
}

Result<std::string> ConsumerSubscription::locate_stream() {
  if (replica_.stream_to_create) {
    auto existing = api_.stream_info(spec_.stream);
    if (existing) return spec_.stream;
    if (!existing.error().is_stream_not_found()) return existing.error();
    // Two replicas may create it at the same moment: the loser's create is refused ("subjects
    // overlap") and the stream is there.
    auto created = api_.create_stream(*replica_.stream_to_create);
    if (!created) {
      if (api_.stream_info(spec_.stream)) return spec_.stream;
      return created.error();
    }
    log_once(fmt::format("{} {}: created stream {} for subject {}", lifecycle_.kind(), spec_.name,
                         spec_.stream, spec_.subject));
    return spec_.stream;
  }
  if (!spec_.stream.empty()) return spec_.stream;
  // The subject decides the stream, whatever the service or its own streams are called.
  return api_.find_stream(spec_.subject);
}

void ConsumerSubscription::log_once(const std::string& text) {
  if (logged_.insert(text).second) status_.event(spdlog::level::info, "consumer", "{}", text);
}

void ConsumerSubscription::install_intake(const nats::ConsumerConfig& config) {
  unserved_since_ = {};  // a consumer just bound has had no chance to serve yet
  std::lock_guard lock(engine_mu_);
  if (stopping()) return;
  if (engine_) {
    engine_->stop();
    engine_.reset();
  }
  deliver_subject_ = config.deliver_subject;
  const bool pushed = !deliver_subject_.empty();
  auto deliver = [this, pushed](nats::InboundMessage&& m) {
    auto placement = consume::Dispatcher::Placement::back;
    // A push consumer resends after ack_wait whatever waits here: keep one copy, the newest.
    if (pushed) {
      auto d = consume::parse_ack_subject(m.reply);
      if (d && d->delivered > 1) placement = consume::Dispatcher::Placement::replace;
    }
    // Only a push delivery displaces (work queues are unbounded: the intake bounds them), and
    // a push intake counts nothing to release; this runs on nats.c's thread, so no lock here.
    auto submitted = dispatcher_->submit(std::move(m), placement);
    if (submitted.refused) give_back(std::move(*submitted.refused));
  };
  if (pushed) {
    engine_ = std::make_unique<consume::QueueIntake>(*ctx_.connection, deliver_subject_,
                                                     config.deliver_group, std::move(deliver));
  } else {
    consume::PullEngine::Options options{
        .stream = lifecycle_.stream(),
        .consumer = lifecycle_.consumer(),
        // A new intake (a rebind) starts with what the handlers were measured to finish.
        .batch = window_.load() > 0 ? window_.load() : initial_window(spec_),
        .expires = spec_.pull_expires,
        .heartbeat = spec_.heartbeat,
        .ack_wait = spec_.ack_wait,
    };
    // Pulled work is bounded by the window, so the queue needs no bound and displaces nothing.
    auto deliver_all = [this](std::vector<nats::InboundMessage>& batch) {
      dispatcher_->submit_all(batch);
      for (auto& refused : batch) give_back(std::move(refused));
    };
    engine_ = std::make_unique<consume::PullEngine>(
        *ctx_.connection, options, std::move(deliver_all),
        [this](const consume::PullStatus& s) { on_pull_signal(s); });
  }
  if (auto started = engine_->start(); !started) {
    status_.warn("cannot subscribe: " + started.error().describe());
    engine_.reset();
    return;
  }
  if (gate_.down()) engine_->hold_back(true);
}

void ConsumerSubscription::forget_probe(uint64_t id) { apply(gate_.dropped(id, Clock::now())); }

void ConsumerSubscription::on_pull_signal(const consume::PullStatus& status) {
  {
    std::lock_guard lock(signal_mu_);
    signal_ = status;
  }
  std::lock_guard lock(wake_mu_);
  woken_ = true;
  wake_.notify_all();
}

void ConsumerSubscription::run_bound() {
  wait_for(tick_);
  if (stopping()) return;

  std::optional<consume::PullStatus> signal;
  {
    std::lock_guard lock(signal_mu_);
    signal.swap(signal_);
  }
  if (!ctx_.connection->connected()) {
    enter_recovering("disconnected from the broker; reconnecting");
    return;
  }
  if (reconnected_.exchange(false)) {
    enter_recovering("reconnected; checking the consumer");
    return;
  }
  if (signal) {
    using consume::PullSignal;
    switch (signal->signal) {
      case PullSignal::no_responders: {
        // The consumer exists but nobody serves its pulls (no leader): pulls refused back to
        // back wait longer each time (docs/design/recovery.md, "Pulls nobody serves").
        const auto now = Clock::now();
        if (now - unanswered_at_ > 2 * ctx_.options.bind_backoff_max) unanswered_backoff_.reset();
        const auto until = now + unanswered_backoff_.next();
        while (!stopping() && Clock::now() < until)
          wait_for(std::chrono::duration_cast<milliseconds>(until - Clock::now()));
        unanswered_at_ = Clock::now();
        if (stopping()) return;
        enter_recovering(replace_if_unserved("its pulls find no responder")
                             ? std::string("the consumer served nobody; deleted to make it anew")
                             : std::string("pull answered: ") + consume::to_string(signal->signal));
        return;
      }
      case PullSignal::consumer_deleted:
        enter_recovering(std::string("pull answered: ") + consume::to_string(signal->signal));
        return;
      case PullSignal::bad_request:
        go_fatal("the broker refused the pull request: " + signal->description);
        return;
      case PullSignal::push_consumer:
        status_.set_state(SubscriptionState::binding,
                          "consumer became push based on the broker; binding again");
        return;
      case PullSignal::leadership_change:
        resend_recent_acks();
        [[fallthrough]];
      case PullSignal::max_waiting:
      default: {
        std::lock_guard lock(engine_mu_);
        if (engine_) engine_->restart_pulls();
        break;
      }
    }
  }
  bool missed;
  {
    std::lock_guard lock(engine_mu_);
    if (!engine_) {
      status_.set_state(SubscriptionState::binding, "pull engine not running");
      return;
    }
    // Read before tick(): a silence long enough to be a gap (a lookup that blocked this thread
    // past it, say) is dropped there with the pulls that owed heartbeats, and the new pulls owe
    // none yet.
    missed = engine_->heartbeat_missed();
    engine_->tick();
    if (const uint64_t gaps = engine_->gaps(); gaps != gaps_logged_) {
      gaps_logged_ = gaps;
      resend_recent_acks();  // the silence may have been a leader moving
      // A connection that went down or came back within the silence explains it: no warning.
      const Clock::time_point link_changed{Clock::duration(link_changed_.load())};
      const uint64_t skipped = engine_->stale_dropped() + stale_skipped_.load();
      if (Clock::now() - link_changed <= 2 * stale_after_)
        base::log_event(*ctx_.log, spdlog::level::info,
                        {{"work", spec_.name}, {"event", "gap-after-outage"}},
                        "work {}: deliveries sent before the connection came back are skipped; "
                        "the broker redelivers them ({} so far)",
                        spec_.name, skipped);
      else
        status_.warn(fmt::format(
            "nothing arrived for {} ms or more (this process was paused or its link cut): "
            "deliveries sent before are skipped, the broker redelivers them ({} so far)",
            stale_after_.count(), skipped));
    }
  }
  if (missed) {
    enter_recovering("missed idle heartbeats");
    return;
  }
  tend_held();
  if (Clock::now() - last_info_ >= ctx_.options.info_interval) poll_info();
}

void ConsumerSubscription::tend_held() {
  if (gate_.quiet()) return;
  const auto now = Clock::now();
  // Messages waiting in the dispatcher meanwhile are kept alive by keep_alive().
  for (const auto& reply : gate_.in_progress_due(now)) {
    log_delivery(*ctx_.log, spec_.name, "in-progress", reply, "work {}: in progress (held): {}",
                 spec_.name, describe_delivery(reply));
    send_ack(reply, consume::kInProgressBody);
  }
  if (auto probe = gate_.next_probe(now)) {
    // Kept alive by the gate until now; due again at the next keep_alive().
    probe->kept_alive = now - keep_alive_every_;
    auto submitted = dispatcher_->submit(std::move(*probe), consume::Dispatcher::Placement::probe);
    if (submitted.refused) give_back(std::move(*submitted.refused));
  }
  status_.set_downstream(gate_.down(), gate_.last_error(), gate_.held());
}

void ConsumerSubscription::poll_info() {
  last_info_ = Clock::now();
  if (auto retired = lifecycle_.tend_predecessor(last_info_); !retired)
    status_.warn(retired.error().describe());
  auto info = api_.consumer_info(lifecycle_.stream(), lifecycle_.consumer());
  if (!info) {
    if (info.error().is_consumer_not_found() || info.error().is_stream_not_found())
      enter_recovering("consumer info: " + info.error().describe());
    else if (replace_if_unserved("its lookups go unanswered (" + info.error().describe() + ")"))
      enter_recovering("the consumer served nobody; deleted to make it anew");
    else
      status_.warn("consumer info failed: " + info.error().describe());
    return;
  }
  bool changed = lifecycle_.saw_consumer(*info);
  if (!info->leader.empty()) {
    changed = changed || (!leader_seen_.empty() && info->leader != leader_seen_);
    leader_seen_ = info->leader;
  }
  (void)changed;
  status_.set_consumer_counts(info->num_pending, info->num_ack_pending, lifecycle_.ack_floor());
  const uint64_t acked = status_.counters.acked.load() + status_.counters.termed.load();
  const auto now = Clock::now();
  const bool busy_here = dispatcher_->in_hand() > 0 || gate_.held() > 0;
  if (stuck_watch_.observe(now, info->ack_floor_stream_seq, info->num_ack_pending, busy_here))
    move_stuck_leader(*info);
  if (info->ack_floor_stream_seq != last_floor_seen_ || acked != last_acked_seen_ ||
      info->num_pending + info->num_ack_pending == 0)
    last_progress_ = now;
  last_floor_seen_ = info->ack_floor_stream_seq;
  last_acked_seen_ = acked;

  const bool stuck = now - last_progress_ > ctx_.options.stall_after;
  if (stuck && status_.state() == SubscriptionState::bound)
    status_.set_state(SubscriptionState::stalled, std::to_string(info->num_pending) + " pending, " +
                                                      std::to_string(info->num_ack_pending) +
                                                      " awaiting ack, and no progress");
  else if (!stuck && status_.state() == SubscriptionState::stalled)
    status_.set_state(SubscriptionState::bound, "progressing again");
}

void ConsumerSubscription::move_stuck_leader(const nats::ConsumerInfo& info) {
  const auto stuck_ms = std::chrono::duration_cast<milliseconds>(stuck_watch_.after()).count();
  auto moved = api_.step_down_consumer_leader(lifecycle_.stream(), lifecycle_.consumer());
  if (!moved) {
    // A single server has no other leader to offer: said once.
    log_once(
        fmt::format("{} {}: consumer {} has {} message(s) awaiting ack and its ack floor {} "
                    "has not moved for {} ms; asking its leader to step down failed: {}",
                    lifecycle_.kind(), spec_.name, lifecycle_.consumer(), info.num_ack_pending,
                    info.ack_floor_stream_seq, stuck_ms, moved.error().describe()));
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

bool ConsumerSubscription::replace_if_unserved(const std::string& evidence) {
  // A fleet told to exit when its consumer goes missing leaves consumers to their operator.
  if (spec_.on_missing == OnMissing::exit) return false;
  const auto now = Clock::now();
  Clock::time_point served{};
  {
    std::lock_guard lock(engine_mu_);
    if (engine_) served = engine_->last_served();
  }
  // The clock starts at the first evidence after the consumer last served (or the link last
  // changed: an outage says nothing about the consumer).
  const Clock::time_point link_changed{Clock::duration(link_changed_.load())};
  if (!ctx_.connection->connected() || unserved_since_ == Clock::time_point{} ||
      served > unserved_since_ || link_changed > unserved_since_) {
    unserved_since_ = now;
    return false;
  }
  const auto unserved = now - unserved_since_;
  if (unserved < ctx_.options.replace_unserved_after) return false;
  // One more look: a leader elected a moment ago answers, a consumer made lately (by a peer that
  // replaced it) is still electing its first, and a missing one is the recovery's to make.
  auto info = api_.consumer_info(lifecycle_.stream(), lifecycle_.consumer());
  const auto made_lately = [&](const std::string& created) {
    const auto made = base::parse_rfc3339_nanos(created);
    return made && !base::older_than(*made, ctx_.options.replace_unserved_after);
  };
  if ((info && (!info->leader.empty() || made_lately(info->created))) ||
      (!info && info.error().is_consumer_not_found())) {
    unserved_since_ = now;
    return false;
  }
  // A stream that does not answer either is a broker still recovering: its consumers elect
  // their leaders after it does, so the time counts from when it answers.
  if (auto stream = api_.stream_info(lifecycle_.stream()); !stream) {
    unserved_since_ = now;
    return false;
  }
  // Lookups can go unanswered while the leader serves pulls: a pull that takes nothing asks the
  // leader itself, and any answer spares the consumer (docs/design/recovery.md, "Unserved").
  if (auto probe = ctx_.connection->request(
          "$JS.API.CONSUMER.MSG.NEXT." + lifecycle_.stream() + "." + lifecycle_.consumer(),
          consume::kLeaderProbeBody, ctx_.options.request_timeout)) {
    if (probe->status == 0 && !probe->reply.empty()) give_back(std::move(*probe));
    // Info: lookups unanswered this long while pulls are served is the broker's own trouble,
    // worth an operator's look (at most once per replace_unserved_after).
    status_.event(
        spdlog::level::info, "consumer-kept",
        "{} {}: consumer {} has answered no lookup for {} s ({}), but its leader answers pulls "
        "(status {}): kept",
        lifecycle_.kind(), spec_.name, lifecycle_.consumer(),
        std::chrono::duration_cast<std::chrono::seconds>(unserved).count(), evidence,
        probe->status);
    unserved_since_ = now;
    return false;
  }
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(unserved).count();
  status_.event(
      spdlog::level::warn, "consumer-unserved",
      "{} {}: consumer {} has served nothing for {} s ({}) while stream {} answers: the broker "
      "left it without a leader; deleting it to make it anew after ack floor {}",
      lifecycle_.kind(), spec_.name, lifecycle_.consumer(), seconds, evidence, lifecycle_.stream(),
      lifecycle_.ack_floor());
  // Nobody leads it to answer the delete: its answer is waited for briefly, and the recovery
  // makes it anew at once, without confirming it missing (docs/design/recovery.md, "Unserved").
  nats::JetStreamApi quick(*ctx_.connection,
                           std::min(ctx_.options.request_timeout, std::chrono::milliseconds(500)));
  if (auto deleted = quick.delete_consumer(lifecycle_.stream(), lifecycle_.consumer()); !deleted)
    status_.event(spdlog::level::info, "consumer-deleted",
                  "{} {}: delete of consumer {} answered: {}", lifecycle_.kind(), spec_.name,
                  lifecycle_.consumer(), deleted.error().describe());
  unserved_since_ = {};
  deleted_here_ = true;
  return true;
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
    Error error;
    using Lookup = ConsumerLifecycle::Lookup;
    // Deleted here a moment ago: missing, no need to confirm it (a create that finds it still
    // there fails, and the next round looks).
    const auto found = std::exchange(deleted_here_, false)
                           ? Lookup::consumer_missing
                           : lifecycle_.confirm(&error, [this](milliseconds d) {
                               wait_for(d);
                               return !stopping();
                             });
    switch (found) {
      case Lookup::present: {
        // Acks first: a new consumer leader that lags the old one delivers from where its state
        // ends, and an ack that reaches it before the pull moves it past what was handled.
        resend_recent_acks();
        std::lock_guard lock(engine_mu_);
        if (!engine_) {
          status_.set_state(SubscriptionState::binding, "re-binding");
          return;
        }
        engine_->restart_pulls();
        break;
      }
      case Lookup::unreachable:
        if (replace_if_unserved("its lookups go unanswered (" + error.describe() + ")")) continue;
        status_.warn("consumer lookup failed (" + error.describe() +
                     "); the broker may be down or paused; retrying");
        wait_for(backoff.next());
        continue;
      case Lookup::stream_missing:
        go_fatal("stream " + lifecycle_.stream() + " no longer exists");
        return;
      case Lookup::consumer_missing:
        if (spec_.on_missing == OnMissing::exit) {
          go_fatal("consumer " + lifecycle_.consumer() + " on stream " + lifecycle_.stream() +
                   " is missing on the broker (deleted, or lost with its store)");
          return;
        }
        {
          unserved_since_ = {};  // whatever is found from now on is a new consumer
          auto made = lifecycle_.recreate(last_handled_seq_.load());
          if (!made) {
            status_.warn("cannot recreate consumer " + lifecycle_.consumer() + ": " +
                         made.error().describe());
            wait_for(backoff.next());
            continue;
          }
          // A push-queue consumer recreated by a peer may deliver elsewhere: follow it.
          bool same_intake;
          {
            std::lock_guard lock(engine_mu_);
            same_intake = engine_ && made->config.deliver_subject == deliver_subject_;
            if (same_intake) engine_->restart_pulls();
          }
          if (!same_intake) install_intake(made->config);
        }
        status_.counters.recoveries++;
        break;
    }
    {
      std::lock_guard lock(signal_mu_);
      signal_.reset();  // settled by this recovery
    }
    last_info_ = last_progress_ = Clock::now();
    status_.set_state(SubscriptionState::bound, "recovered after: " + recovering_reason_);
    return;
  }
}

void ConsumerSubscription::go_fatal(const std::string& reason) {
  status_.set_state(SubscriptionState::fatal, reason);
  {
    std::lock_guard lock(engine_mu_);
    if (engine_) engine_->stop();
  }
  ctx_.fatal(spec_.name, reason);
}

void ConsumerSubscription::adapt_window(Clock::duration handler_time, size_t message_bytes) {
  if (spec_.batch > 0) return;  // fixed by the spec
  const auto bytes = static_cast<int64_t>(message_bytes);
  const int64_t bytes_avg = bytes_avg_.load(std::memory_order_relaxed);
  const int64_t bytes_next = bytes_avg == 0 ? bytes : bytes_avg + (bytes - bytes_avg) / 8;
  bytes_avg_.store(bytes_next, std::memory_order_relaxed);
  // An average of recent handler times, in nanoseconds (races between handler threads only blur
  // the average).
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(handler_time).count();
  const int64_t avg = handler_ns_avg_.load(std::memory_order_relaxed);
  const int64_t next = avg == 0 ? ns : avg + (ns - avg) / 8;
  handler_ns_avg_.store(next, std::memory_order_relaxed);
  const int64_t ack_wait_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(spec_.ack_wait).count();
  // Slow handlers resize at once: the first few measured must shrink the first window before
  // what it took waits long. Fast ones every 32nd message, which costs nothing.
  const bool slow = next > ack_wait_ns / 64;
  if (handled_since_adapt_.fetch_add(1, std::memory_order_relaxed) % 32 != 31 && !slow) return;
  // The window holds what this replica's handlers finish in half of ack_wait (handler time
  // includes any queue behind the handler, such as a worker's stdin, so this is throughput):
  // the last message in it starts well within ack_wait. Never below concurrency: each handler
  // may hold one, kept alive while it runs.
  const int64_t fits = ack_wait_ns / 2 * spec_.concurrency / std::max<int64_t>(next, 1);
  const int64_t most = std::min<int64_t>(
      {kMaxWindow, spec_.max_ack_pending, kMaxWindowBytes / std::max<int64_t>(bytes_next, 1)});
  const int window = static_cast<int>(
      std::clamp<int64_t>(fits, spec_.concurrency, std::max<int64_t>(most, spec_.concurrency)));
  if (window_.exchange(window, std::memory_order_relaxed) == window) return;
  std::lock_guard lock(engine_mu_);
  if (engine_) engine_->set_window(window);
}

void ConsumerSubscription::resend_recent_acks() {
  std::deque<std::string> acks;
  {
    // Oldest first: from the slot the next ack would take, round the ring.
    std::lock_guard lock(recent_acks_mu_);
    const size_t n = recent_acks_.size();
    for (size_t i = 0; i < n; ++i) acks.push_back(recent_acks_[(recent_acks_next_ + i) % n]);
  }
  if (acks.empty()) return;
  // An ack of a message already acked is ignored by the broker: sending again is safe. The last
  // one waits for the broker's answer: the consumer takes acks in order, so once it answers,
  // every ack before it is applied, and pulls sent afterwards cannot overtake them.
  const std::string last = acks.back();
  acks.pop_back();
  for (const auto& reply : acks) send_ack(reply, consume::kAckBody);
  auto answered =
      ctx_.connection->request(last, std::string(consume::kAckBody),
                               std::min(spec_.ack_wait / 4, ctx_.options.request_timeout));
  if (ctx_.log->should_log(spdlog::level::debug)) {
    std::string sequences;
    for (const auto& reply : acks) sequences += describe_delivery(reply) + ", ";
    log_delivery(*ctx_.log, spec_.name, "acks-resent", last,
                 "work {}: sent the last {} acks again ({}{}): {}", spec_.name, acks.size() + 1,
                 sequences, describe_delivery(last),
                 answered ? "applied" : answered.error().describe());
  }
}

void ConsumerSubscription::send_ack(const std::string& reply, std::string_view body) {
  if (reply.empty()) return;
  (void)ctx_.connection->publish(reply, std::string(body));
}

void ConsumerSubscription::process(nats::InboundMessage&& in, bool probe) {
  const auto started = Clock::now();
  // Waited here since before a gap (see consume::PullEngine): the broker has likely handed it to
  // another replica meanwhile. Neither handled nor answered: its redelivery decides who has it.
  if (!probe && in.received != Clock::time_point{} &&
      started - std::max(in.received, in.kept_alive) >= stale_after_) {
    stale_skipped_++;
    log_delivery(*ctx_.log, spec_.name, "skipped", in.reply,
                 "work {}: skipped {}: it waited here since before a gap", spec_.name,
                 describe_delivery(in.reply));
    std::lock_guard lock(engine_mu_);
    if (engine_) engine_->message_done();
    return;
  }
  log_delivery(*ctx_.log, spec_.name, probe ? "probe" : "received", in.reply, "work {}: {} {}",
               spec_.name, probe ? "trying again" : "received", describe_delivery(in.reply));
  auto delivery = consume::parse_ack_subject(in.reply);
  const uint64_t id = delivery ? delivery->stream_seq : 0;
  // While the downstream is down, a fresh message waits untried for its turn as a probe.
  if (!probe && gate_.down()) {
    log_delivery(*ctx_.log, spec_.name, "held", in.reply,
                 "work {}: holding stream sequence {} untried: the downstream is down", spec_.name,
                 id);
    auto back = gate_.hold(std::move(in), id, started);
    if (!back) return;
    in = std::move(*back);
  }
  const uint64_t delivered = delivery ? delivery->delivered : 1;
  if (!probe) {
    status_.counters.received++;
    if (delivered > 1) status_.counters.redelivered++;
  }
  Message message(std::move(in.subject), std::move(in.data), std::move(in.headers),
                  std::move(delivery), std::move(in.reply), in_progress_);
  const std::string& reply = message.reply();

  // Delivered more than twice max_deliver with no verdict, and stored longer ago than those
  // deliveries take: every replica that took it died or timed out (a message that crashes its
  // process). Set aside rather than looped for ever (docs/design/recovery.md, "No verdict").
  if (spec_.max_deliver > 0 && delivered > 2 * static_cast<uint64_t>(spec_.max_deliver) &&
      stored_before(message, spec_.max_deliver * spec_.ack_wait)) {
    settle(message, reply,
           Disposition::term().because(fmt::format(
               "delivered {} times with no verdict (replicas died or timed out handling it)",
               delivered)));
    if (probe) forget_probe(id);  // held untried while the downstream was down
    std::lock_guard lock(engine_mu_);
    if (engine_) engine_->message_done();
    return;
  }
  const auto tried = Clock::now();
  Disposition outcome = run_handler(message, delivered);
  const auto now = Clock::now();
  if (!gate_.down()) adapt_window(now - started, message.data().size());

  if (outcome.kind() == Disposition::Kind::retry) {
    status_.counters.retried++;
    log_delivery(*ctx_.log, spec_.name, "retry", reply,
                 "work {}: retryable failure of stream sequence {}: {}", spec_.name, id,
                 outcome.reason());
    // Still in hand: no ack, no nak, no delivery used. The gate decides what comes next.
    nats::InboundMessage again{message.subject(), reply, message.data(), message.headers()};
    apply(gate_.failed(std::move(again), id, probe, outcome.reason(), outcome.delay(), now));
    return;
  }
  if (id > 0) {
    uint64_t seen = last_handled_seq_.load(std::memory_order_relaxed);
    while (seen < id && !last_handled_seq_.compare_exchange_weak(seen, id)) {
    }
  }
  // Any answer but "retry" shows the downstream works.
  DownstreamGate::Outcome gate;
  if (!gate_.quiet()) gate = gate_.succeeded(probe, tried, now);
  settle(message, reply, std::move(outcome));
  {
    std::lock_guard lock(engine_mu_);
    if (engine_) engine_->message_done();
  }
  apply(std::move(gate));
}

Disposition ConsumerSubscription::run_handler(const Message& message, uint64_t delivered) {
  try {
    return handler_(message);
  } catch (const DownstreamUnavailable& e) {
    return Disposition::retry(e.after()).because(e.what());
  } catch (const std::exception& e) {
    status_.counters.handler_errors++;
    base::log_event(*ctx_.log, spdlog::level::debug,
                    {{"work", spec_.name}, {"event", "handler-threw"}, {"error", e.what()}},
                    "work {}: handler threw: {}", spec_.name, e.what());
    return Disposition::nak(nak_delay(spec_, delivered))
        .because(std::string("handler threw: ") + e.what());
  } catch (...) {
    status_.counters.handler_errors++;
    base::log_event(*ctx_.log, spdlog::level::debug,
                    {{"work", spec_.name}, {"event", "handler-threw"}},
                    "work {}: handler threw something not derived from std::exception", spec_.name);
    return Disposition::nak(nak_delay(spec_, delivered))
        .because("handler threw something not derived from std::exception");
  }
}

bool ConsumerSubscription::stored_before(const Message& message, std::chrono::milliseconds age) {
  const auto& delivery = message.delivery();
  if (!delivery || delivery->timestamp_ns <= 0) return true;  // cannot tell: as old as any
  return base::older_than(delivery->timestamp_ns, age);
}

void ConsumerSubscription::settle(const Message& message, const std::string& reply,
                                  Disposition outcome) {
  const uint64_t delivered = message.delivered();
  // A rejection on the last allowed delivery ends the message here: natsfleet, not the broker,
  // enforces max_deliver, so a last delivery lost to a crash is redelivered, never dropped.
  if (outcome.kind() == Disposition::Kind::nak && spec_.max_deliver > 0 &&
      delivered >= static_cast<uint64_t>(spec_.max_deliver)) {
    std::string why = fmt::format("rejected on delivery {} of {}", delivered, spec_.max_deliver);
    if (!outcome.reason().empty()) why += ": " + outcome.reason();
    outcome = Disposition::term().because(std::move(why));
  }
  switch (outcome.kind()) {
    case Disposition::Kind::ack:
      log_delivery(*ctx_.log, spec_.name, "acked", reply, "work {}: acked {}", spec_.name,
                   describe_delivery(reply));
      send_ack(reply, consume::kAckBody);
      status_.counters.acked++;
      if (!reply.empty()) {
        std::lock_guard lock(recent_acks_mu_);
        if (recent_acks_.size() < static_cast<size_t>(std::max(spec_.max_ack_pending, 1))) {
          recent_acks_.push_back(reply);
        } else {
          recent_acks_[recent_acks_next_] = reply;  // reuses that string's storage
          recent_acks_next_ = (recent_acks_next_ + 1) % recent_acks_.size();
        }
      }
      return;
    case Disposition::Kind::retry:  // not reached: retries are held, never settled
    case Disposition::Kind::nak:
      log_delivery(*ctx_.log, spec_.name, "naked", reply,
                   "work {}: naked {} (redelivery in {} ms): {}", spec_.name,
                   describe_delivery(reply), outcome.delay().count(), outcome.reason());
      send_ack(reply, consume::nak_body(outcome.delay()));
      status_.counters.naked++;
      return;
    case Disposition::Kind::term:
      break;
  }
  const auto& d = message.delivery();
  const std::string where =
      d ? fmt::format("{} sequence {}", d->stream, d->stream_seq) : std::string("a message");
  const std::string reason =
      outcome.reason().empty() ? "terminated by the handler" : outcome.reason();
  if (!spec_.dead_letter.empty()) {
    auto copy = dead_letter_copy(message, spec_.dead_letter, spec_.name, reason,
                                 std::chrono::system_clock::now());
    if (auto stored = publish_dead_letter(*ctx_.connection, copy, kDeadLetterTimeout); !stored) {
      // Not stored, so not terminated: it comes back and is dead-lettered then.
      status_.warn("cannot store the dead letter of " + where + ": " + stored.error().describe() +
                   "; it is redelivered instead");
      send_ack(reply, consume::nak_body(spec_.nak_backoff_min));
      status_.counters.naked++;
      return;
    }
    status_.counters.dead_lettered++;
  }
  send_ack(reply, consume::kTermBody);
  status_.counters.termed++;
  status_.event_with(
      spdlog::level::warn, "terminated",
      {{"stream_seq", message.stream_seq()}, {"delivered", delivered}, {"error", reason}},
      "work {}: {} (subject {}) terminated after {} deliveries ({}){}", spec_.name, where,
      message.subject(), delivered, reason,
      spec_.dead_letter.empty() ? std::string("; no dead_letter subject is set")
                                : "; dead-lettered to " + spec_.dead_letter);
}

void ConsumerSubscription::apply(DownstreamGate::Outcome outcome) {
  using Change = DownstreamGate::Change;
  if (outcome.change == Change::went_down) {
    down_since_ = Clock::now();
    status_.event_with(
        spdlog::level::warn, "downstream-down", {{"error", gate_.last_error()}},
        "work {}: the downstream is down ({}); holding {} message(s) without using deliveries, "
        "taking no more, retrying one at a time with backoff",
        spec_.name, gate_.last_error(), gate_.held());
    std::lock_guard lock(engine_mu_);
    if (engine_) engine_->hold_back(true);
  } else if (outcome.change == Change::went_up && outcome.emptied) {
    status_.event(
        spdlog::level::info, "held-taken-over",
        "work {}: the message held here for the downstream is another replica's now; with "
        "nothing left to try again, new messages are taken and tried",
        spec_.name);
    std::lock_guard lock(engine_mu_);
    if (engine_) engine_->hold_back(false);
  } else if (outcome.change == Change::went_up) {
    status_.event(spdlog::level::info, "downstream-up",
                  "work {}: the downstream is back after {} ms; resuming", spec_.name,
                  std::chrono::duration_cast<milliseconds>(Clock::now() - down_since_).count());
    std::lock_guard lock(engine_mu_);
    if (engine_) engine_->hold_back(false);
  }
  if (outcome.change != Change::none)
    status_.set_downstream(gate_.down(), gate_.last_error(), gate_.held());
  // Older than anything waiting: they go first, in their order.
  for (auto it = outcome.retry.rbegin(); it != outcome.retry.rend(); ++it) {
    it->kept_alive = Clock::now() - keep_alive_every_;  // as a probe is (tend_held)
    auto submitted = dispatcher_->submit(std::move(*it), consume::Dispatcher::Placement::front);
    if (submitted.refused) give_back(std::move(*submitted.refused));
  }
  for (auto& m : outcome.reject) {
    const Message message = as_message(m);
    settle(message, message.reply(),
           Disposition::nak(nak_delay(spec_, message.delivered()))
               .because("failed while other messages went through: " + gate_.last_error()));
    std::lock_guard lock(engine_mu_);
    if (engine_) engine_->message_done();
  }
}

}  // namespace natsfleet::fleet
