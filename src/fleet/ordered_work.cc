#include "fleet/ordered_work.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/parse_number.h"
#include "base/subject_tokens.h"
#include "fleet/consumer_subscription.h"
#include "nats/connection.h"

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;

constexpr const char* kProbeToken = "natsfleet-probe";
constexpr int kProbeAttempts = 3;
constexpr int kProbeKeys = 16;
constexpr milliseconds kProbeTimeout{2000};
// How long fleet_floor() collects the replicas' answers: they come within a round trip, and a
// consumer being recreated can wait.
constexpr milliseconds kFloorWindow{500};

int severity(SubscriptionState s) {
  switch (s) {
    case SubscriptionState::fatal:
      return 5;
    case SubscriptionState::recovering:
      return 4;
    case SubscriptionState::stalled:
      return 3;
    case SubscriptionState::binding:
      return 2;
    case SubscriptionState::bound:
      return 1;
    case SubscriptionState::stopped:
      return 0;
  }
  return 0;
}

}  // namespace

namespace {

// One probe: where the broker maps a subject of the work's own, with `key` in the key token and
// a fixed token in every other wildcard.
std::string probe_key(nats::Connection& connection, const PartitionPlan& plan,
                      const std::string& key, milliseconds timeout) {
  auto tokens = base::subject_tokens(plan.source());
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] == "*" || tokens[i] == ">")
      tokens[i] = static_cast<int>(i) + 1 == plan.key_token() ? std::string_view(key)
                                                              : std::string_view(kProbeToken);
  const std::string published = base::join_subject(tokens);
  const std::string expected = plan.mapped(published);
  auto anywhere = base::subject_tokens(expected);
  anywhere[plan.partition_token() - 1] = "*";

  std::mutex mu;
  std::condition_variable landed_cv;
  std::string landed;
  auto on_message = [&](nats::InboundMessage&& m) {
    std::lock_guard lock(mu);
    if (landed.empty()) landed = m.subject;
    landed_cv.notify_all();
  };
  auto mapped_sub = connection.subscribe(base::join_subject(anywhere), "", on_message);
  if (!mapped_sub)
    return "cannot subscribe to " + base::join_subject(anywhere) + ": " +
           mapped_sub.error().message;
  auto plain_sub = connection.subscribe(published, "", on_message);
  if (!plain_sub) return "cannot subscribe to " + published + ": " + plain_sub.error().message;
  // No stream has this name, so whichever stream holds the subject refuses to store it.
  const Headers headers{{"Nats-Expected-Stream", {std::string(kProbeToken) + "-stores-nothing"}}};
  if (auto sent = connection.publish(published, "", headers); !sent)
    return "cannot publish the probe " + published + ": " + sent.error().message;
  std::string where;
  {
    std::unique_lock lock(mu);
    landed_cv.wait_for(lock, timeout, [&] { return !landed.empty(); });
    where = landed;
  }
  mapped_sub.value().reset();
  plain_sub.value().reset();
  if (where == expected) return {};
  if (where.empty())
    return "a probe published to " + published + " reached no subscriber within " +
           std::to_string(timeout.count()) + " ms (is publishing and subscribing allowed?)";
  if (where == published) return "the broker has no subject mapping for " + plan.source();
  return "the broker maps " + published + " to " + where + ", the plan expects " + expected +
         " (another mapping, or another partition count)";
}

}  // namespace

std::string probe_partition_mapping(nats::Connection& connection, const PartitionPlan& plan,
                                    milliseconds timeout) {
  // Several fixed keys: one key may land where the plan says under another partition count too
  // (fnv % 8 equals fnv % 16 for half of all keys); these 16 tell 16 from 4, 8 and 32, and they
  // are the same on every run, so a check that passes once passes again.
  for (int i = 0; i < kProbeKeys; ++i) {
    const std::string problem =
        probe_key(connection, plan, std::string(kProbeToken) + "-" + std::to_string(i), timeout);
    if (!problem.empty()) return problem;
  }
  return {};
}

OrderedWork::OrderedWork(WorkSpec spec, WorkHandler handler, FleetContext& context)
    : spec_(std::move(spec)),
      handler_(std::move(handler)),
      ctx_(context),
      plan_(PartitionPlan::make(spec_.subject, spec_.key_token, spec_.partitions).value()),
      slots_(spec_.concurrency),
      state_(std::make_unique<Partition[]>(static_cast<size_t>(spec_.partitions))),
      floor_subject_("natsfleet.floor." + spec_.name) {
  for (int p = 0; p < plan_.partitions(); ++p)
    partitions_.push_back(std::make_unique<ConsumerSubscription>(
        partition_spec(spec_, plan_, p), [this, p](const Message& m) { return handle(p, m); }, ctx_,
        ConsumerSubscription::Scope::shared, ReplicaOptions{},
        Fencing{.latest_delivery = true, .slots = &slots_, .fleet_floor = [this, p] {
                  return fleet_floor(p);
                }}));
}

uint64_t OrderedWork::fleet_floor(int partition) {
  uint64_t floor = state_[static_cast<size_t>(partition)].handled_to.load();
  std::mutex mu;
  auto on_answer = [&](nats::InboundMessage&& m) {
    const auto theirs = base::parse_number<uint64_t>(m.data);
    if (!theirs) return;
    std::lock_guard lock(mu);
    floor = std::max(floor, *theirs);
  };
  const std::string inbox = ctx_.connection->new_inbox();
  auto answers = ctx_.connection->subscribe(inbox, "", on_answer);
  if (!answers) return floor;
  if (ctx_.connection->publish(floor_subject_, std::to_string(partition), inbox))
    std::this_thread::sleep_for(kFloorWindow);  // every live replica answers once
  answers.value().reset();                      // no callback runs past this
  std::lock_guard lock(mu);
  ctx_.log->info("work {}: partition {}: the replicas handled up to stream sequence {}", spec_.name,
                 partition, floor);
  return floor;
}

OrderedWork::~OrderedWork() {
  begin_shutdown();
  finish_handlers(Clock::now());
  join();
  wait_handlers();
}

void OrderedWork::start() {
  thread_ = std::thread([this] { run(); });
}

void OrderedWork::run() {
  for (int attempt = 1;; ++attempt) {
    {
      std::unique_lock lock(mu_);
      // Connected before this thread began, or told so since.
      while (!stopping_ && !connected_ && !ctx_.connection->connected())
        wake_.wait_for(lock, milliseconds(100));
      if (stopping_) return;
    }
    const std::string problem = probe_partition_mapping(*ctx_.connection, plan_, kProbeTimeout);
    if (problem.empty()) break;
    const bool unanswered = problem.find("reached no subscriber") != std::string::npos;
    if (unanswered && attempt < kProbeAttempts) continue;  // a reconnect in between, say
    const std::string reason =
        problem +
        ". Per-key order needs the broker to map the subject to partitions: add to "
        "nats-server's configuration (the account's mappings block, or the top level "
        "for the default account) and reload it: mappings { " +
        plan_.mapping_line() + " }; a stream must hold " + plan_.stored_subjects();
    {
      std::lock_guard lock(mu_);
      fatal_ = reason;
    }
    ctx_.log->error("work {}: {}", spec_.name, reason);
    if (ctx_.fatal) ctx_.fatal(spec_.name, reason);
    return;
  }
  ctx_.log->info(
      "work {}: per-key order by subject token {}, {} partitions of {}; the broker maps "
      "{} as planned",
      spec_.name, plan_.key_token(), plan_.partitions(), plan_.stored_subjects(), plan_.source());
  // Peers recreating a missing partition consumer ask what this replica handled in it.
  auto answering = ctx_.connection->subscribe(floor_subject_, "", [this](nats::InboundMessage&& m) {
    const auto partition = base::parse_number<int>(m.data);
    if (!partition || *partition < 0 || *partition >= plan_.partitions() || m.reply.empty()) return;
    (void)ctx_.connection->publish(
        m.reply, std::to_string(state_[static_cast<size_t>(*partition)].handled_to.load()));
  });
  if (!answering)
    ctx_.log->warn("work {}: cannot answer peers on {}: {}", spec_.name, floor_subject_,
                   answering.error().describe());
  std::lock_guard lock(mu_);
  if (stopping_) return;
  if (answering) floor_answers_ = std::move(answering.value());
  for (auto& p : partitions_) p->start();
  started_partitions_ = true;
}

void OrderedWork::connection_changed(bool connected) {
  {
    std::lock_guard lock(mu_);
    connected_ = connected;
    wake_.notify_all();
    if (!started_partitions_) return;
  }
  for (auto& p : partitions_) p->connection_changed(connected);
}

void OrderedWork::begin_shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    wake_.notify_all();
  }
  for (auto& p : partitions_) p->begin_shutdown();
}

bool OrderedWork::finish_handlers(Clock::time_point deadline) {
  bool done = true;
  for (auto& p : partitions_) done = p->finish_handlers(deadline) && done;
  return done;
}

void OrderedWork::join() {
  if (thread_.joinable()) thread_.join();
  for (auto& p : partitions_) p->join();
  std::lock_guard lock(mu_);
  floor_answers_.reset();
}

void OrderedWork::wait_handlers() {
  for (auto& p : partitions_) p->wait_handlers();
}

Disposition OrderedWork::handle(int partition, const Message& message) {
  Partition& part = state_[static_cast<size_t>(partition)];
  const uint64_t seq = message.stream_seq();
  if (is_repeat(part.handled, part.handled_to.load(), message)) {
    ++repeats_skipped_;
    ctx_.log->info(
        "work {}: partition {}: stream sequence {} (delivery {}) was handled here already; acked "
        "again without the handler (the broker lost its ack, or a leader that had been paused "
        "sent it again)",
        spec_.name, partition, seq, message.delivered());
    return Disposition::ack();
  }
  // Counted once per message: a held message tried again (its downstream is down) comes back.
  const bool again = part.last_seen.exchange(seq) == seq;
  if (message.delivered() > 1 && !again) {
    ++takeovers_;
    const int64_t published = message.delivery() ? message.delivery()->timestamp_ns : 0;
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    const int64_t waited_ms = published > 0 ? std::max<int64_t>(now - published, 0) / 1'000'000 : 0;
    takeover_wait_ms_ += static_cast<uint64_t>(waited_ms);
    ctx_.log->info(
        "work {}: partition {} handed over to this replica at stream sequence {} (delivery {}, "
        "{} ms after it was published: the replica that held it did not answer within "
        "ack_wait, or gave it back)",
        spec_.name, partition, seq, message.delivered(), waited_ms);
  }
  part.held = true;  // the subscription holds one of slots_ meanwhile
  struct Release {
    Partition& part;
    ~Release() { part.held = false; }
  } release{part};
  Disposition outcome = handler_(message);
  if (outcome.kind() == Disposition::Kind::ack || outcome.kind() == Disposition::Kind::term) {
    part.handled.remember(message);
    uint64_t was = part.handled_to.load();
    while (seq > was && !part.handled_to.compare_exchange_weak(was, seq)) {
    }
  }
  return outcome;
}

SubscriptionHealth OrderedWork::health() const {
  SubscriptionHealth h;
  h.name = spec_.name;
  h.kind = "work";
  h.subject = spec_.subject;
  h.partitions = plan_.partitions();
  h.partition_takeovers = takeovers_.load();
  h.takeover_wait_ms = takeover_wait_ms_.load();
  h.repeats_skipped = repeats_skipped_.load();
  bool started = false;
  {
    std::lock_guard lock(mu_);
    started = started_partitions_;
    if (!fatal_.empty()) {
      h.state = SubscriptionState::fatal;
      h.last_error = fatal_;
      return h;
    }
  }
  h.consumer = partition_consumer(spec_.name, 0) + ".." + std::to_string(plan_.partitions() - 1);
  if (!started) return h;  // binding: the probe has not answered yet
  int worst = -1;
  for (int p = 0; p < plan_.partitions(); ++p) {
    const SubscriptionHealth s = partitions_[static_cast<size_t>(p)]->health();
    if (severity(s.state) > worst) {
      worst = severity(s.state);
      h.state = s.state;
      if (!s.last_error.empty()) h.last_error = s.name + ": " + s.last_error;
    }
    if (h.stream.empty()) h.stream = s.stream;
    h.counters += s.counters;
    h.consumer_pending += s.consumer_pending;
    h.consumer_ack_pending += s.consumer_ack_pending;
    h.downstream_down = h.downstream_down || s.downstream_down;
    if (s.downstream_down && h.downstream_error.empty()) h.downstream_error = s.downstream_error;
    h.held += s.held;
    if (state_[static_cast<size_t>(p)].held.load()) h.partitions_held.push_back(p);
  }
  return h;
}

}  // namespace natsfleet::fleet
