#include "fleet/ordered/ordered_work.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include "base/backoff.h"
#include "base/log_event.h"
#include "fleet/ordered/lease_store.h"
#include "fleet/ordered/partition_leases.h"
#include "fleet/ordered/partition_probe.h"
#include "fleet/ordered/partition_reader.h"
#include "fleet/transport.h"
#include "nats/connection.h"

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;

constexpr int kProbeAttempts = 3;
constexpr milliseconds kProbeTimeout{2000};
// The lease bucket's calls: a renewal that times out may have been applied, and the next one
// is then refused for its revision, so they get time.
constexpr milliseconds kApiTimeout{5000};
// A reader's calls (consumers made, looked up, deleted): what times out is tried again, so a
// short timeout finds the broker back (a meta leader elected again) sooner.
constexpr milliseconds kReaderApiTimeout{2000};
// The most a reader waits before it tries again to open after a refusal.
constexpr milliseconds kMaxOpenBackoff{1000};
constexpr milliseconds kTick{100};

// This process among the members: host, pid and a random part (a restarted process is new).
std::string member_id() {
  char host[64] = {};
  (void)gethostname(host, sizeof(host) - 1);
  std::string id;
  for (const char* c = host; *c; ++c)
    id += (std::isalnum(static_cast<unsigned char>(*c)) || *c == '-') ? *c : '_';
  std::mt19937_64 random{std::random_device{}()};
  return (id.empty() ? "replica" : id) + "-" + std::to_string(getpid()) + "-" +
         std::to_string(random() % 1'000'000);
}

}  // namespace

OrderedWork::OrderedWork(WorkSpec spec, WorkHandler handler, FleetContext& context)
    : spec_(std::move(spec)),
      handler_(std::move(handler)),
      ctx_(context),
      plan_(PartitionPlan::of(spec_).value()),
      me_(member_id()),
      status_(spec_.name, "work", spec_.subject, context.log),
      transport_(*context.connection),
      api_(*context.connection, kApiTimeout),
      reader_api_(*context.connection, kReaderApiTimeout) {}

OrderedWork::~OrderedWork() {
  begin_shutdown();
  finish_handlers(Clock::now());
  join();
  join_handlers();
}

void OrderedWork::start() {
  thread_ = std::thread([this] { run(); });
}

void OrderedWork::wait_for(milliseconds d) {
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, d, [this] { return stopping_; });
}

void OrderedWork::run() {
  for (int attempt = 1;; ++attempt) {
    {
      std::unique_lock lock(mu_);
      while (!stopping_ && !connected_ && !ctx_.connection->connected())
        wake_.wait_for(lock, milliseconds(100));
      if (stopping_) return;
    }
    auto probed = probe_partition_mapping(*ctx_.connection, plan_, kProbeTimeout);
    if (probed) break;
    const bool unanswered = probed.error().code == Errc::timeout;
    if (unanswered && attempt < kProbeAttempts) continue;  // a reconnect in between, say
    const std::string reason =
        probed.error().message +
        ". Per-key order needs the broker to map the subject to partitions: add to "
        "nats-server's configuration (the account's mappings block, or the top level "
        "for the default account) and reload it: mappings { " +
        plan_.mapping_line() + " }; a stream must hold " + plan_.stored_subjects();
    {
      std::lock_guard lock(mu_);
      fatal_ = reason;
    }
    status_.set_state(SubscriptionState::fatal, reason);
    if (ctx_.fatal) ctx_.fatal(spec_.name, reason);
    return;
  }
  base::Backoff backoff(milliseconds(250), milliseconds(10'000));
  while (!set_up()) {
    wait_for(backoff.next());
    if (std::lock_guard lock(mu_); stopping_) return;
  }
  base::log_event(
      *ctx_.log, spdlog::level::info, {{"work", spec_.name}, {"event", "ordered-started"}},
      "work {}: per-key order by subject token {}, {} partitions of {} on stream {}; member {}, "
      "leases in bucket {}",
      spec_.name, plan_.key_token(), plan_.partitions(), plan_.stored_subjects(), stream_, me_,
      store_->bucket());
  for (int i = 0; i < std::max(1, spec_.flow.concurrency); ++i)
    workers_.emplace_back([this] { work_loop(); });
  // Often enough that a lapsed lease is seen and taken within a second of its lapse. Nothing
  // else happens on this thread, so no broker call of a reader delays a renewal.
  const milliseconds every =
      std::clamp(spec_.per_key->lease / 10, milliseconds(50), milliseconds(500));
  while (true) {
    if (std::lock_guard lock(mu_); stopping_) return;
    round();
    release_drained();
    join_retired();
    wait_for(every);
  }
}

void OrderedWork::tend_loop(int partition, std::shared_ptr<PartitionReader> reader,
                            std::stop_token stop) {
  while (!stop.stop_requested()) {
    tend(partition, reader);
    std::unique_lock lock(mu_);
    tend_wake_.wait_for(lock, kTick, [&] { return stopping_ || stop.stop_requested(); });
    if (stopping_) return;  // finish_handlers() stops the readers
  }
  reader->stop();
}

void OrderedWork::release_drained() {
  std::vector<int> drained;
  {
    std::lock_guard lock(mu_);
    for (const auto& [p, o] : owned_)
      if (o.drained) drained.push_back(p);
  }
  for (int p : drained) {
    const Progress done = progress(p);
    drop(p);
    if (auto released = leases_->release(p, done); !released)
      base::log_event(*ctx_.log, spdlog::level::warn,
                      {{"work", spec_.name},
                       {"event", "lease-release-failed"},
                       {"partition", p},
                       {"error", released.error().describe()}},
                      "work {}: partition {}: cannot release its lease ({}); it lapses instead",
                      spec_.name, p, released.error().describe());
  }
}

bool OrderedWork::set_up() {
  std::string stream = spec_.stream;
  if (stream.empty()) {
    auto found = api_.find_stream(plan_.stored_subjects());
    if (!found) {
      status_.warn("no stream holds " + plan_.stored_subjects() + ": " + found.error().describe());
      return false;
    }
    stream = *found;
  }
  auto info = api_.stream_info(stream);
  if (!info) {
    status_.warn("cannot read stream " + stream + ": " + info.error().describe());
    return false;
  }
  auto store = std::make_unique<StreamLeaseStore>(api_, lease_bucket(spec_.name),
                                                  std::min(info->num_replicas, 3));
  if (auto made = store->ensure(); !made) {
    status_.warn("cannot make the lease bucket " + store->bucket() + ": " +
                 made.error().describe());
    return false;
  }
  stream_ = stream;
  retention_ = info->retention;
  leases_ = std::make_unique<PartitionLeases>(
      *store, PartitionLeases::Options{.me = me_,
                                       .partitions = plan_.partitions(),
                                       .lease = spec_.per_key->lease,
                                       .margin = spec_.per_key->lease / 5,
                                       .settle = 2 * spec_.per_key->lease});
  store_ = std::move(store);
  status_.set_location(
      stream_, partition_consumer(spec_.name, 0) + ".." + std::to_string(plan_.partitions() - 1));
  last_round_ok_ = Clock::now();
  {
    std::lock_guard lock(mu_);
    started_ = true;
  }
  status_.set_state(SubscriptionState::bound);
  return true;
}

Progress OrderedWork::progress(int partition) {
  {
    std::lock_guard lock(mu_);
    auto it = owned_.find(partition);
    if (it != owned_.end() && it->second.opened)
      return {it->second.reader->lanes().checkpoint(), it->second.reader->consumer()};
  }
  auto lease = leases_->owned(partition);
  return lease ? Progress{lease->checkpoint, lease->reader} : Progress{};
}

void OrderedWork::round() {
  auto changes = leases_->round([this](int p) { return progress(p); });
  const Clock::time_point now = Clock::now();
  if (changes.error) {
    round_error_ = changes.error->describe();
    base::log_event(*ctx_.log, spdlog::level::debug,
                    {{"work", spec_.name}, {"event", "lease-round"}, {"error", round_error_}},
                    "work {}: lease round: {}", spec_.name, round_error_);
    if (now - last_round_ok_ > spec_.per_key->lease)
      status_.set_state(SubscriptionState::recovering,
                        "the lease bucket does not answer: " + round_error_);
  } else {
    last_round_ok_ = now;
    if (status_.state() == SubscriptionState::recovering)
      status_.set_state(SubscriptionState::bound);
  }
  for (int p : changes.lost) {
    ++leases_lost_;
    base::log_event(
        *ctx_.log, spdlog::level::warn,
        {{"work", spec_.name}, {"event", "lease-lost"}, {"partition", p}},
        "work {}: partition {}: another replica took its lease (this one could not renew it in "
        "time); stopped at once",
        spec_.name, p);
    drop(p);
  }
  for (int p : changes.vanished)
    base::log_event(*ctx_.log, spdlog::level::warn,
                    {{"work", spec_.name}, {"event", "lease-vanished"}, {"partition", p}},
                    "work {}: partition {}: its lease, written before, reads absent: bucket {} "
                    "lost it (a broker fault); taken again after the last checkpoint seen here",
                    spec_.name, p, lease_bucket(spec_.name));
  for (int p : changes.taken) take(p);
  for (int p : changes.to_release) {
    std::lock_guard lock(mu_);
    auto it = owned_.find(p);
    if (it == owned_.end() || it->second.draining) continue;
    it->second.draining = true;
    it->second.drain_deadline = now + spec_.per_key->lease;
    base::log_event(*ctx_.log, spdlog::level::info,
                    {{"work", spec_.name}, {"event", "lease-handover"}, {"partition", p}},
                    "work {}: partition {} goes to another member: finishing what was read",
                    spec_.name, p);
  }
}

void OrderedWork::take(int partition) {
  auto lease = leases_->owned(partition);
  if (!lease) return;
  ++leases_taken_;
  PartitionReader::Setup setup{.mu = &mu_,
                               .connection = ctx_.connection,
                               .api = &reader_api_,
                               .plan = &plan_,
                               .spec = &spec_,
                               .stream = stream_,
                               .retention = retention_,
                               .partition = partition,
                               .epoch = lease->epoch,
                               .checkpoint = lease->checkpoint,
                               .first_term = lease->first,
                               .adopt = lease->reader,
                               .window = std::max(64, spec_.flow.batch)};
  auto reader = std::make_shared<PartitionReader>(
      setup, [this](PartitionReader& r, std::vector<nats::InboundMessage>& batch) {
        std::vector<std::string> keys;
        std::lock_guard lock(mu_);
        auto it = owned_.find(r.partition());
        if (it == owned_.end() || it->second.reader.get() != &r) return;
        r.accept(batch, keys);
        for (auto& k : keys) schedule_.ready(Ready{r.partition(), std::move(k), &r});
        if (!keys.empty()) wake_.notify_all();
      });
  base::log_event(*ctx_.log, spdlog::level::info,
                  {{"work", spec_.name},
                   {"event", "lease-taken"},
                   {"partition", partition},
                   {"epoch", lease->epoch},
                   {"stream_seq", lease->checkpoint}},
                  "work {}: partition {} is this replica's, epoch {}, after stream sequence {}",
                  spec_.name, partition, lease->epoch, lease->checkpoint);
  std::lock_guard lock(mu_);
  if (owned_.count(partition)) retire_locked(owned_.at(partition));  // none, normally
  Owned& slot = owned_[partition];
  slot = Owned{.reader = reader};
  slot.tender = std::jthread([this, partition, reader](std::stop_token stop) {
    tend_loop(partition, reader, std::move(stop));
  });
}

void OrderedWork::retire_locked(Owned& o) {
  o.tender.request_stop();
  retired_.push_back(std::move(o.tender));
  tend_wake_.notify_all();
}

void OrderedWork::join_retired() {
  std::vector<std::jthread> retired;
  {
    std::lock_guard lock(mu_);
    retired.swap(retired_);
  }
  retired.clear();  // joins: each stops its reader first, which may take the lock
}

void OrderedWork::drop(int partition) {
  std::shared_ptr<PartitionReader> reader;  // goes without the lock: its end takes it
  std::lock_guard lock(mu_);
  auto it = owned_.find(partition);
  if (it == owned_.end()) return;
  reader = it->second.reader;
  reader->retire();
  reader->lanes().clear();
  rewinds_ += reader->rewinds();
  retire_locked(it->second);  // its thread stops the reader: the only one that calls into it
  owned_.erase(it);
}

void OrderedWork::tend(int partition, const std::shared_ptr<PartitionReader>& reader) {
  enum class Step { stop, open, read } step;
  {
    std::lock_guard lock(mu_);
    auto it = owned_.find(partition);
    if (it == owned_.end() || it->second.reader != reader) return;
    Owned& o = it->second;
    if (o.draining && o.stopped) {
      if (Clock::now() >= o.drain_deadline) o.reader->lanes().clear();  // the next owner reads them
      o.drained = o.reader->lanes().empty() && o.running == 0;
      return;
    }
    step = o.draining ? Step::stop : o.opened ? Step::read : Step::open;
  }
  switch (step) {
    case Step::stop:
      return stop_reader(partition, reader);
    case Step::open:
      return open_reader(partition, reader);
    case Step::read:
      return read_partition(partition, reader);
  }
}

void OrderedWork::stop_reader(int partition, const std::shared_ptr<PartitionReader>& reader) {
  reader->stop();
  std::lock_guard lock(mu_);
  auto it = owned_.find(partition);
  if (it != owned_.end() && it->second.reader == reader) it->second.stopped = true;
}

void OrderedWork::open_reader(int partition, const std::shared_ptr<PartitionReader>& reader) {
  {
    std::lock_guard lock(mu_);
    auto it = owned_.find(partition);
    if (it == owned_.end() || Clock::now() < it->second.next_open) return;
  }
  std::vector<std::string> keys;
  auto open = reader->open(keys);
  log_open(partition, *reader, open);
  std::lock_guard lock(mu_);
  auto it = owned_.find(partition);
  if (it == owned_.end() || it->second.reader != reader) return;
  if (open) {
    it->second.opened = true;
    if (reader->consumer().empty())
      status_.warn("partition " + std::to_string(partition) + ": " + reader->last_rewind_why());
    for (auto& k : keys) schedule_.ready(Ready{partition, std::move(k), reader.get()});
    if (!keys.empty()) wake_.notify_all();
  } else {
    status_.warn("partition " + std::to_string(partition) + ": " + open.error().describe());
    it->second.open_backoff = std::min(it->second.open_backoff * 2, kMaxOpenBackoff);
    it->second.next_open = Clock::now() + it->second.open_backoff;
  }
}

void OrderedWork::read_partition(int partition, const std::shared_ptr<PartitionReader>& reader) {
  const uint64_t before = reader->rewinds();
  std::vector<std::string> keys;
  reader->tick(keys);
  if (!keys.empty()) {
    std::lock_guard lock(mu_);
    auto it = owned_.find(partition);
    if (it != owned_.end() && it->second.reader == reader) {
      for (auto& k : keys) schedule_.ready(Ready{partition, std::move(k), reader.get()});
      wake_.notify_all();
    }
  }
  if (reader->rewinds() != before)
    base::log_event(*ctx_.log, spdlog::level::warn,
                    {{"work", spec_.name},
                     {"event", "rewind"},
                     {"partition", partition},
                     {"error", reader->last_rewind_why()}},
                    "work {}: partition {}: read again from its checkpoint: {}", spec_.name,
                    partition, reader->last_rewind_why());
}

void OrderedWork::log_open(int partition, PartitionReader& reader, const Result<void>& open) {
  std::string consumer;
  size_t waiting = 0;
  {
    std::lock_guard lock(mu_);
    consumer = reader.consumer();
    waiting = reader.lanes().waiting();
  }
  if (!reader.adopt_error().empty())
    base::log_event(*ctx_.log, spdlog::level::info,
                    {{"work", spec_.name},
                     {"event", "reader-not-adopted"},
                     {"partition", partition},
                     {"error", reader.adopt_error()}},
                    "work {}: partition {}: the last owner's consumer cannot be adopted ({}); "
                    "making one",
                    spec_.name, partition, reader.adopt_error());
  if (!open) return;
  if (reader.adopted())
    base::log_event(*ctx_.log, spdlog::level::info,
                    {{"work", spec_.name},
                     {"event", "reader-adopted"},
                     {"partition", partition},
                     {"consumer", consumer}},
                    "work {}: partition {}: reading on through {}, the last owner's consumer ({} "
                    "of its deliveries not done, read again)",
                    spec_.name, partition, consumer, waiting);
}

void OrderedWork::connection_changed(bool connected) {
  std::lock_guard lock(mu_);
  connected_ = connected;
  if (connected)
    for (auto& [p, o] : owned_) o.reader->reconnected();
  wake_.notify_all();
}

void OrderedWork::begin_shutdown() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  for (auto& [p, o] : owned_) o.reader->request_stop();
  if (started_) leases_->cut_short();  // a round waiting on the broker would hold up the stop
  wake_.notify_all();
  tend_wake_.notify_all();
}

bool OrderedWork::finish_handlers(Clock::time_point deadline) {
  join();
  std::vector<std::shared_ptr<PartitionReader>> readers;
  {
    std::lock_guard lock(mu_);
    for (auto& [p, o] : owned_) {
      readers.push_back(o.reader);
      retire_locked(o);
    }
  }
  join_retired();  // no thread calls into a reader from here on
  for (auto& r : readers) r->stop();
  bool done = true;
  {
    std::unique_lock lock(mu_);
    auto idle = [this] {
      return std::all_of(owned_.begin(), owned_.end(),
                         [](const auto& o) { return o.second.running == 0; });
    };
    done = wake_.wait_until(lock, deadline, idle) || idle();
  }
  if (leases_) {
    std::map<int, Progress> done_to;
    for (int p : leases_->owned_partitions()) done_to[p] = progress(p);
    // The lease thread is joined: nothing else calls api_. No call outlasts the deadline by much.
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - ctx_.clock->now());
    api_.set_timeout(std::clamp(left, milliseconds(50), kApiTimeout));
    leases_->leave([&](int p) { return done_to[p]; }, deadline);
  }
  return done;
}

void OrderedWork::join() {
  if (thread_.joinable()) thread_.join();
  join_retired();
}

bool OrderedWork::await_handlers(Clock::time_point until) {
  std::unique_lock lock(mu_);
  return wake_.wait_until(lock, until, [this] { return !schedule_.any_running(); });
}

void OrderedWork::join_handlers() {
  for (auto& w : workers_)
    if (w.joinable()) w.join();
  std::map<int, Owned> owned;
  {
    std::lock_guard lock(mu_);
    owned.swap(owned_);
  }  // the readers go without the lock: stopping one waits for its callbacks, which take it
}

SubscriptionHealth OrderedWork::health() const {
  SubscriptionHealth h = status_.snapshot();
  h.partitions = plan_.partitions();
  h.leases_taken = leases_taken_.load();
  h.leases_lost = leases_lost_.load();
  std::lock_guard lock(mu_);
  h.rewinds = rewinds_.load();
  for (const auto& [p, o] : owned_) {
    if (o.opened) h.partitions_owned.push_back(p);  // its lease held and its reader reading
    h.rewinds += o.reader->rewinds();
  }
  h.held = schedule_.waiting();
  if (!fatal_.empty()) {
    h.state = SubscriptionState::fatal;
    h.last_error = fatal_;
  }
  return h;
}

}  // namespace natsfleet::fleet
