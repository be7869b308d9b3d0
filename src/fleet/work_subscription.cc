#include "fleet/work_subscription.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "consume/ack_metadata.h"
#include "fleet/backoff.h"
#include "fleet/consumer_shape.h"
#include "nats/connection.h"

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;

// Lets a long handler call Message::in_progress().
class InProgress final : public detail::DeliveryControl {
 public:
  explicit InProgress(nats::Connection& connection) : connection_(connection) {}
  void in_progress(const std::string& reply) override {
    (void)connection_.publish(reply, std::string(consume::kInProgressBody));
  }

 private:
  nats::Connection& connection_;
};

constexpr int kMaxWindow = 256;

// The first window: small, so slow handlers never sit on a large buffer; it grows once the
// handlers prove fast (see adapt_window).
int initial_window(const WorkSpec& spec) {
  if (spec.batch > 0) return spec.batch;
  return std::min({spec.concurrency * 4, kMaxWindow, spec.max_ack_pending});
}

}  // namespace

WorkSubscription::WorkSubscription(WorkSpec spec, WorkHandler handler, FleetContext& context)
    : spec_(std::move(spec)),
      handler_(std::move(handler)),
      ctx_(context),
      status_(spec_.name, "work", spec_.subject, context.log),
      api_(*context.connection, context.options.request_timeout),
      tick_(std::clamp(spec_.heartbeat / 4, milliseconds(25), milliseconds(500))),
      in_progress_(std::make_shared<InProgress>(*context.connection)) {
  dispatcher_ = std::make_unique<consume::Dispatcher>(
      spec_.concurrency, [this](nats::InboundMessage&& m) { process(std::move(m)); });
}

WorkSubscription::~WorkSubscription() {
  begin_shutdown();
  finish_handlers(Clock::now());
  join();
}

void WorkSubscription::start() {
  thread_ = std::thread([this] { run(); });
}

void WorkSubscription::connection_changed(bool connected) {
  if (connected) reconnected_ = true;
  std::lock_guard lock(wake_mu_);
  woken_ = true;
  wake_.notify_all();
}

void WorkSubscription::begin_shutdown() {
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

void WorkSubscription::give_back(nats::InboundMessage&& m) {
  send_ack(m.reply, consume::nak_body(milliseconds(0)));
  status_.counters.naked++;
}

bool WorkSubscription::finish_handlers(Clock::time_point deadline) {
  auto left = [&] {
    return std::max(std::chrono::duration_cast<milliseconds>(deadline - Clock::now()),
                    milliseconds(0));
  };
  // Buffered messages that never started go back at once rather than after ack_wait.
  bool done =
      dispatcher_->stop(left(), [this](nats::InboundMessage&& m) { give_back(std::move(m)); });
  if (!done) status_.warn("a handler was still running at the shutdown deadline");
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

void WorkSubscription::join() {
  if (thread_.joinable()) thread_.join();
  if (status_.state() != SubscriptionState::fatal) status_.set_state(SubscriptionState::stopped);
}

SubscriptionHealth WorkSubscription::health() const { return status_.snapshot(); }

void WorkSubscription::wait_for(milliseconds d) {
  std::unique_lock lock(wake_mu_);
  wake_.wait_for(lock, d, [&] { return woken_ || stopping(); });
  woken_ = false;
}

void WorkSubscription::run() {
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

void WorkSubscription::run_binding() {
  Backoff backoff(ctx_.options.bind_backoff_min, ctx_.options.bind_backoff_max);
  while (!stopping()) {
    if (!ctx_.connection->connected()) {
      status_.warn("waiting for the broker");
      wait_for(tick_);
      continue;
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

Result<void> WorkSubscription::bind() {
  std::string stream = spec_.stream;
  if (stream.empty()) {
    auto found = api_.find_stream(spec_.subject);
    if (!found) return found.error();
    stream = found.value();
  }
  auto info = api_.consumer_info(stream, spec_.name);
  if (!info && info.error().is_consumer_not_found()) {
    info = api_.create_consumer(stream, desired_consumer_config(spec_));
    if (info)
      status_.log().info("work {}: created shared pull consumer {} on stream {} (subject {})",
                         spec_.name, spec_.name, stream, spec_.subject);
    // Another replica may have created it a moment earlier with another start: bind to that.
    else if (auto again = api_.consumer_info(stream, spec_.name))
      info = std::move(again);
  }
  if (!info) return info.error();

  ShapeCheck shape = check_shape(spec_, info->config);
  if (!shape.compatible)
    return Result<void>(Errc::invalid_argument,
                        "consumer " + spec_.name + " on stream " + stream + " " + shape.problem);
  if (shape.needs_update) {
    auto updated = api_.create_consumer(stream, shape.updated);
    if (!updated) return updated.error();
    status_.log().info("work {}: updated consumer {} on stream {} in place ({})", spec_.name,
                       spec_.name, stream, shape.changes);
    info = std::move(updated);
  }

  stream_ = stream;
  ack_floor_ = info->ack_floor_stream_seq;
  last_floor_seen_ = ack_floor_;
  last_info_ = last_progress_ = Clock::now();
  status_.set_location(stream, spec_.name);
  status_.set_consumer_counts(info->num_pending, info->num_ack_pending, ack_floor_);
  install_engine(stream);
  return {};
}

void WorkSubscription::install_engine(const std::string& stream) {
  std::lock_guard lock(engine_mu_);
  if (stopping()) return;
  if (engine_) {
    engine_->stop();
    engine_.reset();
  }
  consume::PullEngine::Options options{
      .stream = stream,
      .consumer = spec_.name,
      .batch = initial_window(spec_),
      .expires = spec_.pull_expires,
      .heartbeat = spec_.heartbeat,
  };
  engine_ = std::make_unique<consume::PullEngine>(
      *ctx_.connection, options,
      [this](nats::InboundMessage&& m) {
        if (auto refused = dispatcher_->submit(std::move(m))) give_back(std::move(*refused));
      },
      [this](const consume::PullStatus& s) { on_pull_signal(s); });
  if (auto started = engine_->start(); !started) {
    status_.warn("cannot subscribe the pull inbox: " + started.error().describe());
    engine_.reset();
  }
}

void WorkSubscription::on_pull_signal(const consume::PullStatus& status) {
  {
    std::lock_guard lock(signal_mu_);
    signal_ = status;
  }
  std::lock_guard lock(wake_mu_);
  woken_ = true;
  wake_.notify_all();
}

void WorkSubscription::run_bound() {
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
      case PullSignal::consumer_deleted:
      case PullSignal::no_responders:
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
    engine_->tick();
    missed = engine_->heartbeat_missed();
  }
  if (missed) {
    enter_recovering("missed idle heartbeats");
    return;
  }
  if (Clock::now() - last_info_ >= ctx_.options.info_interval) poll_info();
}

void WorkSubscription::poll_info() {
  last_info_ = Clock::now();
  auto info = api_.consumer_info(stream_, spec_.name);
  if (!info) {
    if (info.error().is_consumer_not_found() || info.error().is_stream_not_found())
      enter_recovering("consumer info: " + info.error().describe());
    else
      status_.warn("consumer info failed: " + info.error().describe());
    return;
  }
  ack_floor_ = std::max(ack_floor_, info->ack_floor_stream_seq);
  status_.set_consumer_counts(info->num_pending, info->num_ack_pending, ack_floor_);
  const uint64_t acked = status_.counters.acked.load() + status_.counters.termed.load();
  const auto now = Clock::now();
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

void WorkSubscription::enter_recovering(const std::string& why) {
  recovering_reason_ = why;
  status_.set_state(SubscriptionState::recovering, why);
}

WorkSubscription::Lookup WorkSubscription::lookup_once(Error* error) {
  auto info = api_.consumer_info(stream_, spec_.name);
  if (info) {
    ack_floor_ = std::max(ack_floor_, info->ack_floor_stream_seq);
    return Lookup::present;
  }
  *error = info.error();
  if (info.error().is_consumer_not_found()) return Lookup::consumer_missing;
  if (info.error().is_stream_not_found()) return Lookup::stream_missing;
  return Lookup::unreachable;
}

WorkSubscription::Lookup WorkSubscription::confirm_lookup(Error* error) {
  Lookup first = lookup_once(error);
  if (first == Lookup::present || first == Lookup::unreachable) return first;
  // A new leader may briefly not know the consumer; a recovering cluster may not know the
  // stream for a while. Only a verdict that holds across the whole window counts.
  const int lookups = std::max(ctx_.options.missing_lookups, 1);
  const auto spacing = ctx_.options.missing_window / std::max(lookups - 1, 1);
  Lookup verdict = first;
  for (int i = 1; i < lookups && !stopping(); ++i) {
    wait_for(spacing);
    Lookup next = lookup_once(error);
    if (next == Lookup::present || next == Lookup::unreachable) return next;
    if (next == Lookup::consumer_missing) verdict = Lookup::consumer_missing;
  }
  return verdict;
}

Result<void> WorkSubscription::recreate_consumer() {
  auto stream = api_.stream_info(stream_);
  if (!stream) return stream.error();
  nlohmann::json config = desired_consumer_config(spec_);
  std::string from = spec_.start == StartAt::all ? "the stream's start" : "new messages";
  // Start after what this replica knows was acked. A stream that restarted below that floor was
  // recreated (wiped store): all of it is new to this consumer.
  if (ack_floor_ > 0 && stream->last_seq >= ack_floor_) {
    config = config_starting_at(spec_, ack_floor_ + 1);
    from = "stream sequence " + std::to_string(ack_floor_ + 1);
  } else if (ack_floor_ > 0) {
    config["deliver_policy"] = "all";
    from = "the stream's start (the stream was reset below ack floor " +
           std::to_string(ack_floor_) + ")";
  }
  auto created = api_.create_consumer(stream_, config);
  if (!created) {
    // A peer replica recreated it first: use theirs.
    if (auto existing = api_.consumer_info(stream_, spec_.name)) return {};
    return created.error();
  }
  status_.log().warn("work {}: consumer {} was missing on stream {}; recreated it from {}",
                     spec_.name, spec_.name, stream_, from);
  return {};
}

void WorkSubscription::run_recovering() {
  Backoff backoff(ctx_.options.bind_backoff_min, ctx_.options.bind_backoff_max);
  while (!stopping()) {
    if (!ctx_.connection->connected()) {
      status_.warn("broker unreachable; waiting for the reconnect");
      wait_for(tick_);
      continue;
    }
    reconnected_ = false;
    Error error;
    switch (confirm_lookup(&error)) {
      case Lookup::present: {
        std::lock_guard lock(engine_mu_);
        if (!engine_) {
          status_.set_state(SubscriptionState::binding, "re-binding");
          return;
        }
        engine_->restart_pulls();
        break;
      }
      case Lookup::unreachable:
        status_.warn("consumer lookup failed (" + error.describe() +
                     "); the broker may be down or paused; retrying");
        wait_for(backoff.next());
        continue;
      case Lookup::stream_missing:
        go_fatal("stream " + stream_ + " no longer exists");
        return;
      case Lookup::consumer_missing:
        if (spec_.on_missing == OnMissing::exit) {
          go_fatal("consumer " + spec_.name + " on stream " + stream_ +
                   " is missing on the broker (deleted, or lost with its store)");
          return;
        }
        if (auto made = recreate_consumer(); !made) {
          status_.warn("cannot recreate consumer " + spec_.name + ": " + made.error().describe());
          wait_for(backoff.next());
          continue;
        }
        {
          std::lock_guard lock(engine_mu_);
          if (engine_) engine_->restart_pulls();
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

void WorkSubscription::go_fatal(const std::string& reason) {
  status_.set_state(SubscriptionState::fatal, reason);
  {
    std::lock_guard lock(engine_mu_);
    if (engine_) engine_->stop();
  }
  ctx_.fatal(spec_.name, reason);
}

void WorkSubscription::adapt_window(Clock::duration handler_time) {
  if (spec_.batch > 0) return;  // fixed by the spec
  // An average of recent handler times, in nanoseconds (races between handler threads only blur
  // the average).
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(handler_time).count();
  const int64_t avg = handler_ns_avg_.load(std::memory_order_relaxed);
  const int64_t next = avg == 0 ? ns : avg + (ns - avg) / 8;
  handler_ns_avg_.store(next, std::memory_order_relaxed);
  if (handled_since_adapt_.fetch_add(1, std::memory_order_relaxed) % 32 != 31) return;
  // A buffered message must be started well within ack_wait: the window holds at most a quarter
  // of ack_wait's worth of work for this replica's handlers.
  const auto budget =
      std::chrono::duration_cast<std::chrono::nanoseconds>(spec_.ack_wait).count() / 4;
  const int64_t fits = budget / std::max<int64_t>(next, 1) * spec_.concurrency;
  const int window = static_cast<int>(
      std::clamp<int64_t>(fits, spec_.concurrency, std::min(kMaxWindow, spec_.max_ack_pending)));
  std::lock_guard lock(engine_mu_);
  if (engine_) engine_->set_window(window);
}

void WorkSubscription::send_ack(const std::string& reply, std::string_view body) {
  if (reply.empty()) return;
  (void)ctx_.connection->publish(reply, std::string(body));
}

void WorkSubscription::process(nats::InboundMessage&& in) {
  auto delivery = consume::parse_ack_subject(in.reply);
  const uint64_t delivered = delivery ? delivery->delivered : 1;
  status_.counters.received++;
  if (delivered > 1) status_.counters.redelivered++;
  Message message(std::move(in.subject), std::move(in.data), std::move(in.headers), delivery,
                  in.reply, in_progress_);

  Disposition outcome = Disposition::ack();
  const auto started = Clock::now();
  try {
    outcome = handler_(message);
  } catch (const std::exception& e) {
    status_.counters.handler_errors++;
    SPDLOG_LOGGER_DEBUG(ctx_.log, "work {}: handler threw: {}", spec_.name, e.what());
    Backoff backoff(spec_.nak_backoff_min, spec_.nak_backoff_max, [] { return 1.0; });
    milliseconds delay{};
    for (uint64_t i = 0; i < delivered; ++i) delay = backoff.next();
    outcome = Disposition::nak(delay);
  } catch (...) {
    status_.counters.handler_errors++;
    outcome = Disposition::nak(spec_.nak_backoff_min);
  }
  adapt_window(Clock::now() - started);
  // The broker will not redeliver past max_deliver: say so explicitly (terminated advisory).
  if (outcome.kind() == Disposition::Kind::nak && spec_.max_deliver > 0 &&
      delivered >= static_cast<uint64_t>(spec_.max_deliver))
    outcome = Disposition::term();

  switch (outcome.kind()) {
    case Disposition::Kind::ack:
      send_ack(in.reply, consume::kAckBody);
      status_.counters.acked++;
      break;
    case Disposition::Kind::nak:
      send_ack(in.reply, consume::nak_body(outcome.delay()));
      status_.counters.naked++;
      break;
    case Disposition::Kind::term:
      send_ack(in.reply, consume::kTermBody);
      status_.counters.termed++;
      break;
  }
  std::lock_guard lock(engine_mu_);
  if (engine_) engine_->message_done();
}

}  // namespace natsfleet::fleet
