#include "fleet/delivery_pipeline.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <utility>

#include "base/backoff.h"
#include "base/log_event.h"
#include "base/utc_time.h"
#include "consume/ack_metadata.h"
#include "fleet/dead_letter_copy.h"
#include "fleet/delivery_control.h"
#include "fleet/handler_call.h"

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;

// How long a dead letter may take to be stored before the message is nak'd instead.
constexpr milliseconds kDeadLetterTimeout{5000};

// A rejected message's nak delay: nak_backoff_min doubling with each delivery, up to the max.
milliseconds nak_delay(const WorkSpec& spec, uint64_t delivered) {
  return base::exponential_delay(spec.failure.nak_backoff_min, spec.failure.nak_backoff_max,
                                 delivered > 0 ? delivered - 1 : 0);
}

// "stream sequence S (delivery D, consumer sequence C)" for debug lines, read from the reply
// subject only when a line is written: an argument of a line that is off costs nothing.
struct DeliveryText {
  const std::string& reply;
};
DeliveryText describe_delivery(const std::string& reply) { return {reply}; }

}  // namespace
}  // namespace natsfleet::fleet

template <>
struct fmt::formatter<natsfleet::fleet::DeliveryText> : fmt::formatter<std::string_view> {
  auto format(const natsfleet::fleet::DeliveryText& text, format_context& ctx) const {
    const auto d = natsfleet::consume::parse_ack_subject(text.reply);
    if (!d) return fmt::format_to(ctx.out(), "a message");
    return fmt::format_to(ctx.out(), "stream sequence {} (delivery {}, consumer sequence {})",
                          d->stream_seq, d->delivered, d->consumer_seq);
  }
};

namespace natsfleet::fleet {
namespace {

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

DownstreamGate::Options gate_options(const WorkSpec& spec) {
  DownstreamGate::Options options;
  options.retry_min = spec.failure.retry_min;
  options.retry_max = spec.failure.retry_max;
  options.in_progress_every = std::max(spec.flow.ack_wait / 3, milliseconds(100));
  return options;
}

consume::Dispatcher::Options dispatcher_options(const WorkSpec& spec, const base::Clock& clock,
                                                IntakeControl& intake) {
  consume::Dispatcher::Options options;
  // An idle handler thread reads the pull inbox itself: no hand-off between threads.
  options.feed = [&intake](std::chrono::milliseconds wait) { return intake.read(wait); };
  options.concurrency = spec.flow.concurrency;
  options.clock = &clock;
  // A redelivery of a message still waiting (push: the broker resent it after ack_wait)
  // replaces it: the same stream sequence.
  options.key = [](const nats::InboundMessage& m) {
    auto d = consume::parse_ack_subject(m.reply);
    return d ? std::to_string(d->stream_seq) : std::string();
  };
  return options;
}

// The message was stored at least `age` ago, by the broker's stored time and this host's clock
// (true when the delivery does not say).
bool stored_before(const Message& message, milliseconds age) {
  const auto& delivery = message.delivery();
  if (!delivery || delivery->timestamp_ns <= 0) return true;  // cannot tell: as old as any
  return base::older_than(delivery->timestamp_ns, age);
}

}  // namespace

DeliveryPipeline::DeliveryPipeline(const WorkSpec& spec, WorkHandler handler,
                                   SubscriptionStatus& status, Transport& transport,
                                   IntakeControl& intake, const base::Clock& clock)
    : spec_(spec),
      handler_(std::move(handler)),
      status_(status),
      transport_(transport),
      intake_(intake),
      clock_(clock),
      link_(std::make_shared<DeliveryLink>(&transport, static_cast<Settler*>(this))),
      stale_after_(std::max(spec.flow.ack_wait / 2, heartbeat_of(spec) * 3)),
      keep_alive_every_(spec.flow.ack_wait / 3),
      tuner_(spec.flow.batch, spec.flow.concurrency, spec.flow.max_ack_pending, spec.flow.ack_wait),
      gate_(gate_options(spec)),
      dispatcher_(dispatcher_options(spec, clock, intake),
                  [this](nats::InboundMessage&& m, const consume::Dispatcher::Turn& turn) {
                    process(std::move(m), turn.probe, turn.started);
                  }) {}

DeliveryPipeline::~DeliveryPipeline() {
  link_->detach();  // a Message a handler kept may outlive this and the transport
  dispatcher_.stop(milliseconds(0), [this](nats::InboundMessage&& m) { give_back(std::move(m)); });
  dispatcher_.join();
  give_back_deferred(true);
}

// --- The intake hands messages over -------------------------------------------------------

void DeliveryPipeline::take(nats::InboundMessage&& message, bool pushed) {
  auto placement = consume::Dispatcher::Placement::back;
  // A push consumer resends after ack_wait whatever waits here: keep one copy, the newest.
  if (pushed) {
    auto d = consume::parse_ack_subject(message.reply);
    if (d && d->delivered > 1) placement = consume::Dispatcher::Placement::replace;
  }
  resubmit(std::move(message), placement);
}

void DeliveryPipeline::take_all(std::vector<nats::InboundMessage>& batch) {
  dispatcher_.submit_all(batch);
  for (auto& refused : batch) give_back(std::move(refused));  // after stop()
  batch.clear();
}

// --- One message, stage by stage [a handler thread] -------------------------------------------

void DeliveryPipeline::process(nats::InboundMessage&& in, bool probe, Clock::time_point started) {
  if (admit(in, probe, started) == Step::done) return;
  auto control = std::make_shared<DeliveryControl>(link_);
  Message message = as_message(in, control);
  if (screen(message, probe) == Step::done) return;
  // When the handler was called, for the downstream gate; while it has seen no failure, the
  // turn's start stands in (earlier, so a success never looks newer than it is).
  const Turn turn{
      .probe = probe, .started = started, .tried = gate_.quiet() ? started : clock_.now()};
  Disposition returned =
      call_work_handler(handler_, message, status_, nak_delay(spec_, message.delivered()));
  if (auto verdict = verdict_of(message, *control, turn, std::move(returned)))
    (void)conclude(message, turn, std::move(*verdict), true);
}

DeliveryPipeline::Step DeliveryPipeline::admit(nats::InboundMessage& in, bool probe,
                                               Clock::time_point started) {
  // Waited here since before a gap (see consume::PullEngine): the broker has likely handed it to
  // another replica meanwhile. Neither handled nor answered: its redelivery decides who has it.
  if (!probe && in.received != Clock::time_point{} &&
      started - std::max(in.received, in.kept_alive) >= stale_after_) {
    stale_skipped_++;
    log_delivery(status_.log(), spec_.name, "skipped", in.reply,
                 "work {}: skipped {}: it waited here since before a gap", spec_.name,
                 describe_delivery(in.reply));
    intake_.message_done();
    return Step::done;
  }
  log_delivery(status_.log(), spec_.name, probe ? "probe" : "received", in.reply, "work {}: {} {}",
               spec_.name, probe ? "trying again" : "received", describe_delivery(in.reply));
  if (probe) return Step::next;
  // While the downstream is down, a fresh message waits untried for its turn as a probe.
  if (gate_.down()) {
    auto delivery = consume::parse_ack_subject(in.reply);
    const uint64_t id = delivery ? delivery->stream_seq : 0;
    log_delivery(status_.log(), spec_.name, "held", in.reply,
                 "work {}: holding stream sequence {} untried: the downstream is down", spec_.name,
                 id);
    auto back = gate_.hold(std::move(in), id, started);
    if (!back) return Step::done;
    in = std::move(*back);
  }
  return Step::next;
}

DeliveryPipeline::Step DeliveryPipeline::screen(const Message& message, bool probe) {
  const uint64_t delivered = message.delivered();
  if (!probe) {
    status_.counters.received++;
    if (delivered > 1) status_.counters.redelivered++;
  }
  // Delivered more than twice max_deliver with no verdict, and stored longer ago than those
  // deliveries take: every replica that took it died or timed out (a message that crashes its
  // process). Set aside rather than looped for ever (docs/design/recovery.md, "No verdict").
  if (spec_.failure.max_deliver <= 0 ||
      delivered <= 2 * static_cast<uint64_t>(spec_.failure.max_deliver) ||
      !stored_before(message, spec_.failure.max_deliver * spec_.flow.ack_wait))
    return Step::next;
  (void)settle(message,
               Disposition::term().because(fmt::format(
                   "delivered {} times with no verdict (replicas died or timed out handling it)",
                   delivered)));
  // Held untried while the downstream was down: the gate probes with the next.
  if (probe) apply(gate_.dropped(message.stream_seq(), clock_.now()));
  intake_.message_done();
  return Step::done;
}

std::optional<Disposition> DeliveryPipeline::verdict_of(Message& message, DeliveryControl& control,
                                                        const Turn& turn, Disposition returned) {
  using Next = DeliveryControl::Next::Step;
  if (returned.kind() != Disposition::Kind::later) {
    auto next = control.handler_returned(std::move(returned));
    return std::move(next.verdict);  // carry_out: nothing else is possible before later()
  }
  // Waiting before the control says so: a settle() on another thread finds it at once.
  {
    std::lock_guard lock(deferred_mu_);
    deferred_.emplace(&control, Deferred{&control, message, turn, clock_.now()});
  }
  auto next = control.handler_returned(Disposition::later());
  if (next.step == Next::carry_out) {
    std::lock_guard lock(deferred_mu_);
    deferred_.erase(&control);
    return std::move(next.verdict);
  }
  // Out of the window: the broker's max_ack_pending bounds what waits for a verdict.
  intake_.message_done();
  return std::nullopt;
}

Result<void> DeliveryPipeline::conclude(const Message& message, const Turn& turn,
                                        Disposition outcome, bool in_window) {
  const auto now = clock_.now();
  if (in_window && !gate_.down()) {
    if (auto window = tuner_.observe(now - turn.started, message.data().size()))
      intake_.set_window(*window);
  }
  if (outcome.kind() == Disposition::Kind::retry) {
    if (!in_window) intake_.message_back();
    keep_for_retry(message, turn.probe, outcome, now);
    return {};
  }
  if (const uint64_t id = message.stream_seq(); id > 0) {
    uint64_t seen = last_handled_seq_.load(std::memory_order_relaxed);
    while (seen < id && !last_handled_seq_.compare_exchange_weak(seen, id)) {
    }
  }
  // Any answer but "retry" shows the downstream works.
  DownstreamGate::Outcome gate;
  if (!gate_.quiet()) gate = gate_.succeeded(turn.probe, turn.tried, now);
  auto sent = settle(message, std::move(outcome));
  if (in_window) intake_.message_done();
  apply(std::move(gate));
  return sent;
}

void DeliveryPipeline::keep_for_retry(const Message& message, bool probe,
                                      const Disposition& outcome, Clock::time_point now) {
  status_.counters.retried++;
  log_delivery(status_.log(), spec_.name, "retry", message.reply(),
               "work {}: retryable failure of stream sequence {}: {}", spec_.name,
               message.stream_seq(), outcome.reason());
  // Still in hand: no ack, no nak, no delivery used. The gate decides what comes next.
  nats::InboundMessage again{message.subject(), message.reply(), message.data(), message.headers()};
  apply(gate_.failed(std::move(again), message.stream_seq(), probe, outcome.reason(),
                     outcome.delay(), now));
}

Result<void> DeliveryPipeline::settle(const Message& message, Disposition outcome) {
  const std::string& reply = message.reply();
  const uint64_t delivered = message.delivered();
  // A rejection on the last allowed delivery ends the message here: natsfleet, not the broker,
  // enforces max_deliver, so a last delivery lost to a crash is redelivered, never dropped.
  if (outcome.kind() == Disposition::Kind::nak && spec_.failure.max_deliver > 0 &&
      delivered >= static_cast<uint64_t>(spec_.failure.max_deliver)) {
    std::string why =
        fmt::format("rejected on delivery {} of {}", delivered, spec_.failure.max_deliver);
    if (!outcome.reason().empty()) why += ": " + outcome.reason();
    outcome = Disposition::term().because(std::move(why));
  }
  switch (outcome.kind()) {
    case Disposition::Kind::ack:
      log_delivery(status_.log(), spec_.name, "acked", reply, "work {}: acked {}", spec_.name,
                   describe_delivery(reply));
      status_.counters.acked++;
      remember_ack(reply);
      return send(reply, consume::kAckBody);
    case Disposition::Kind::retry:  // not reached: retries are kept, never settled
    case Disposition::Kind::later:  // not reached: verdict_of waits for the verdict
    case Disposition::Kind::nak:
      log_delivery(status_.log(), spec_.name, "naked", reply,
                   "work {}: naked {} (redelivery in {} ms): {}", spec_.name,
                   describe_delivery(reply), outcome.delay().count(), outcome.reason());
      status_.counters.naked++;
      return send(reply, consume::nak_body(outcome.delay()));
    case Disposition::Kind::term:
      return terminate(message, outcome.reason());
  }
  return {};
}

Result<void> DeliveryPipeline::terminate(const Message& message, const std::string& why) {
  const std::string& reply = message.reply();
  const auto& d = message.delivery();
  const std::string where =
      d ? fmt::format("{} sequence {}", d->stream, d->stream_seq) : std::string("a message");
  const std::string reason = why.empty() ? "terminated by the handler" : why;
  if (!spec_.failure.dead_letter.empty()) {
    auto copy = dead_letter_copy(message, spec_.failure.dead_letter, spec_.name, reason,
                                 std::chrono::system_clock::now());
    if (auto stored = publish_dead_letter(transport_, copy, kDeadLetterTimeout); !stored) {
      // Not stored, so not terminated: it comes back and is dead-lettered then.
      status_.warn("cannot store the dead letter of " + where + ": " + stored.error().describe() +
                   "; it is redelivered instead");
      status_.counters.naked++;
      (void)send(reply, consume::nak_body(spec_.failure.nak_backoff_min));
      return stored;
    }
    status_.counters.dead_lettered++;
  }
  auto sent = send(reply, consume::kTermBody);
  status_.counters.termed++;
  status_.event_with(
      spdlog::level::warn, "terminated",
      {{"stream_seq", message.stream_seq()}, {"delivered", message.delivered()}, {"error", reason}},
      "work {}: {} (subject {}) terminated after {} deliveries ({}){}", spec_.name, where,
      message.subject(), message.delivered(), reason,
      spec_.failure.dead_letter.empty() ? std::string("; no dead_letter subject is set")
                                        : "; dead-lettered to " + spec_.failure.dead_letter);
  return sent;
}

Result<void> DeliveryPipeline::send(const std::string& reply, std::string_view body) {
  if (reply.empty()) return {};
  return transport_.publish(reply, body);  // unsent: the broker redelivers after ack_wait
}

// --- A deferred verdict: settle_deferred and its keep-alive are in delivery_pipeline_deferred.cc

void DeliveryPipeline::give_back_deferred(bool all) {
  std::vector<std::string> back;
  {
    std::lock_guard lock(deferred_mu_);
    for (auto it = deferred_.begin(); it != deferred_.end();) {
      if (it->second.control->close(Errc::shutting_down) || all) {
        back.push_back(it->second.message.reply());
        it = deferred_.erase(it);
      } else {
        ++it;  // its verdict is under way (settle_deferred takes it)
      }
    }
  }
  for (const auto& reply : back) {
    log_delivery(status_.log(), spec_.name, "given-back", reply,
                 "work {}: gave back {}: no verdict was given before the subscription stopped",
                 spec_.name, describe_delivery(reply));
    status_.counters.naked++;
    (void)send(reply, consume::nak_body(milliseconds(0)));
  }
}

// --- What the gate decided ---------------------------------------------------------------------

void DeliveryPipeline::apply(DownstreamGate::Outcome outcome) {
  using Change = DownstreamGate::Change;
  if (outcome.change == Change::went_down) {
    down_since_ = clock_.now();
    status_.event_with(
        spdlog::level::warn, "downstream-down", {{"error", gate_.last_error()}},
        "work {}: the downstream is down ({}); holding {} message(s) without using deliveries, "
        "taking no more, retrying one at a time with backoff",
        spec_.name, gate_.last_error(), gate_.held());
    intake_.hold_back(true);
  } else if (outcome.change == Change::went_up && outcome.emptied) {
    status_.event(
        spdlog::level::info, "held-taken-over",
        "work {}: the message held here for the downstream is another replica's now; with "
        "nothing left to try again, new messages are taken and tried",
        spec_.name);
    intake_.hold_back(false);
  } else if (outcome.change == Change::went_up) {
    status_.event(spdlog::level::info, "downstream-up",
                  "work {}: the downstream is back after {} ms; resuming", spec_.name,
                  std::chrono::duration_cast<milliseconds>(clock_.now() - down_since_).count());
    intake_.hold_back(false);
  }
  if (outcome.change != Change::none)
    status_.set_downstream(gate_.down(), gate_.last_error(), gate_.held());
  // Older than anything waiting: they go first, in their order.
  for (auto it = outcome.retry.rbegin(); it != outcome.retry.rend(); ++it) {
    it->kept_alive = clock_.now() - keep_alive_every_;  // as a probe is (tend_held)
    resubmit(std::move(*it), consume::Dispatcher::Placement::front);
  }
  for (auto& m : outcome.reject) {
    const Message message = as_message(m, nullptr);
    (void)settle(message,
                 Disposition::nak(nak_delay(spec_, message.delivered()))
                     .because("failed while other messages went through: " + gate_.last_error()));
    intake_.message_done();
  }
}

// --- Upkeep [the supervisor's thread] -----------------------------------------------------------

void DeliveryPipeline::keep_alive(Clock::time_point now) {
  keep_deferred_alive(now);
  if (spec_.flow.keep_alive_limit <= milliseconds(0)) return;
  auto kept = dispatcher_.keep_alive(
      now, keep_alive_every_, spec_.flow.keep_alive_limit,
      stale_after_ > milliseconds(0) ? Clock::duration(stale_after_) : Clock::duration::max());
  for (const auto& reply : kept.due) (void)send(reply, consume::kInProgressBody);
  status_.counters.kept_alive += kept.due.size();
  const auto limit_ms = spec_.flow.keep_alive_limit.count();
  if (!kept.expired.empty())
    status_.event(
        spdlog::level::warn, "keep-alive-limit",
        "work {}: {} message(s) waited over {} ms (keep_alive_limit) for a handler; gave them "
        "back for another replica",
        spec_.name, kept.expired.size(), limit_ms);
  for (auto& m : kept.expired) {
    give_back(std::move(m));
    intake_.message_done();
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

void DeliveryPipeline::tend_held(Clock::time_point now) {
  if (gate_.quiet()) return;
  // Messages waiting in the dispatcher meanwhile are kept alive by keep_alive().
  for (const auto& reply : gate_.in_progress_due(now)) {
    log_delivery(status_.log(), spec_.name, "in-progress", reply, "work {}: in progress (held): {}",
                 spec_.name, describe_delivery(reply));
    (void)send(reply, consume::kInProgressBody);
  }
  if (auto probe = gate_.next_probe(now)) {
    // Kept alive by the gate until now; due again at the next keep_alive().
    probe->kept_alive = now - keep_alive_every_;
    resubmit(std::move(*probe), consume::Dispatcher::Placement::probe);
  }
  status_.set_downstream(gate_.down(), gate_.last_error(), gate_.held());
}

void DeliveryPipeline::resend_recent_acks(milliseconds timeout) {
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
  for (const auto& reply : acks) (void)send(reply, consume::kAckBody);
  auto answered = transport_.request(last, consume::kAckBody, {}, timeout);
  if (status_.log().should_log(spdlog::level::debug)) {
    std::string sequences;
    for (const auto& reply : acks) sequences += fmt::format("{}, ", describe_delivery(reply));
    log_delivery(status_.log(), spec_.name, "acks-resent", last,
                 "work {}: sent the last {} acks again ({}{}): {}", spec_.name, acks.size() + 1,
                 sequences, describe_delivery(last),
                 answered ? "applied" : answered.error().describe());
  }
}

bool DeliveryPipeline::stop(milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  // Buffered messages that never started go back at once rather than after ack_wait.
  const bool done =
      dispatcher_.stop(deadline, [this](nats::InboundMessage&& m) { give_back(std::move(m)); });
  // Held for a downstream outage: another replica (or this one, restarted) tries them.
  for (auto& m : gate_.take_all()) give_back(std::move(m));
  {
    // Verdicts the application owes; a message it does not hold (a pull work's, unfetched) goes
    // back without one.
    std::unique_lock lock(deferred_mu_);
    deferred_settled_.wait_until(lock, until, [this] {
      return std::none_of(deferred_.begin(), deferred_.end(),
                          [](const auto& d) { return d.second.control->with_application(); });
    });
  }
  give_back_deferred(false);
  return done;
}

void DeliveryPipeline::join() { dispatcher_.join(); }

void DeliveryPipeline::request_stop() { link_->request_stop(); }

// --- Helpers ---------------------------------------------------------------------------------

void DeliveryPipeline::give_back(nats::InboundMessage&& message) {
  log_delivery(status_.log(), spec_.name, "given-back", message.reply, "work {}: gave back {}",
               spec_.name, describe_delivery(message.reply));
  (void)send(message.reply, consume::nak_body(milliseconds(0)));
  status_.counters.naked++;
}

Message DeliveryPipeline::as_message(nats::InboundMessage& in,
                                     std::shared_ptr<DeliveryControl> control) const {
  auto delivery = consume::parse_ack_subject(in.reply);
  return Message(std::move(in.subject), std::move(in.data), std::move(in.headers),
                 std::move(delivery), std::move(in.reply), std::move(control));
}

void DeliveryPipeline::remember_ack(const std::string& reply) {
  if (reply.empty()) return;
  std::lock_guard lock(recent_acks_mu_);
  if (recent_acks_.size() < static_cast<size_t>(std::max(spec_.flow.max_ack_pending, 1))) {
    recent_acks_.push_back(reply);
  } else {
    recent_acks_[recent_acks_next_] = reply;  // reuses that string's storage
    recent_acks_next_ = (recent_acks_next_ + 1) % recent_acks_.size();
  }
}

void DeliveryPipeline::resubmit(nats::InboundMessage&& message,
                                consume::Dispatcher::Placement placement) {
  auto submitted = dispatcher_.submit(std::move(message), placement);
  if (submitted.refused) give_back(std::move(*submitted.refused));  // after stop()
}

}  // namespace natsfleet::fleet
