#include "fleet/ordered/partition_reader.h"

#include <algorithm>
#include <future>
#include <system_error>

#include "base/subject_tokens.h"
#include "base/utc_time.h"
#include "consume/ack_metadata.h"
#include "fleet/consumer_shape.h"
#include "fleet/ordered/partition_plan.h"

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;

// Acks of the checkpoint go out at most this often (and on stop and before a rewind).
constexpr milliseconds kAckEvery{100};
// The partition's consumers are listed this often: one left by an owner that acted late goes
// (on an interest stream it would hold every message).
constexpr milliseconds kSweepEvery{30'000};

// How long a reader with room reads nothing before it asks the stream's leader (ReaderWatch).
milliseconds watch_period(const WorkSpec& spec) {
  return std::max<milliseconds>(2 * heartbeat_of(spec), milliseconds(2000));
}

}  // namespace

PartitionReader::PartitionReader(Setup setup, Deliver deliver)
    : setup_(std::move(setup)),
      deliver_(std::move(deliver)),
      prefix_(partition_consumer(setup_.spec->name, setup_.partition)),
      lanes_(setup_.checkpoint),
      watch_(watch_period(*setup_.spec)) {}

PartitionReader::~PartitionReader() { stop_engine(); }

std::string PartitionReader::consumer_name(uint64_t generation) const {
  return prefix_ + "-e" + std::to_string(setup_.epoch) + "g" + std::to_string(generation);
}

std::string PartitionReader::key_of(const std::string& subject) const {
  const auto tokens = base::subject_tokens(subject);
  const auto at = static_cast<size_t>(setup_.plan->key_token() - 1);
  return at < tokens.size() ? std::string(tokens[at]) : subject;
}

std::string PartitionReader::current_consumer() const {
  std::lock_guard lock(*setup_.mu);
  return consumer_;
}

bool PartitionReader::of_partition(const std::string& consumer) const {
  return consumer == prefix_ || consumer.starts_with(prefix_ + "-e");
}

Result<void> PartitionReader::open(std::vector<std::string>& ready) {
  if (!setup_.adopt.empty()) {
    auto adopted = adopt(ready);
    adopted_ = static_cast<bool>(adopted);
    if (adopted) return start_engine();
    adopt_error_ = adopted.error().describe();
  }
  nats::JetStreamApi& api = *setup_.api;
  // Only the meta leader lists consumers. Without it, an owner that has a checkpoint reads on
  // from there (by gets until a consumer can be made); older consumers are found by the sweep.
  auto names = api.consumer_names(setup_.stream);
  if (!names && setup_.first_term) return names.error();
  if (names)
    for (const auto& name : *names)
      if (of_partition(name)) to_delete_.push_back(name);
  // Everything at or below an older consumer's ack floor was done by an owner before.
  const EarlierFloors floors = earlier_floors(
      to_delete_, [&](const std::string& name) { return api.consumer_info(setup_.stream, name); });
  uint64_t done = std::max(setup_.checkpoint, floors.highest);
  const uint64_t oldest_floor = floors.lowest;
  uint64_t start = done + 1;
  if (setup_.first_term && to_delete_.empty() && setup_.spec->start == StartAt::new_messages) {
    auto info = api.stream_info(setup_.stream);
    if (!info) return info.error();
    done = info->last_seq;
    start = done + 1;
  } else if (oldest_floor != UINT64_MAX && oldest_floor < done) {
    // What an older owner did but acked nowhere is read again as known, and acked here, so a
    // work-queue or interest stream lets go of it.
    start = oldest_floor + 1;
  }
  lanes_ = KeyLanes(done);
  next_sweep_ = names ? std::chrono::steady_clock::now() + kSweepEvery
                      : std::chrono::steady_clock::time_point{};
  if (auto made = make_consumer(start); !made) {
    // Read by gets meanwhile (tick); the consumer is made again from here.
    unmade_start_ = start;
    make_failed(made.error().describe());
    return {};
  }
  return start_engine();
}

void PartitionReader::make_failed(const std::string& why) {
  last_rewind_why_ = "its consumer cannot be made (" + why + "); reading by gets meanwhile";
  make_backoff_ = std::min(make_backoff_ * 2, milliseconds(1000));
  next_make_ = std::chrono::steady_clock::now() + make_backoff_;
}

void PartitionReader::push_stored_locked(nats::StoredMessage&& m, std::vector<std::string>& ready) {
  std::string key = key_of(m.subject);
  Delivery d{.stream = setup_.stream,
             .consumer = prefix_,
             .stream_seq = m.seq,
             .delivered = 1,
             .timestamp_ns = base::parse_rfc3339_nanos(m.time).value_or(0)};
  Message message(std::move(m.subject), std::move(m.data), std::move(m.headers), std::move(d), {},
                  control_, FencingToken{.partition = setup_.partition, .epoch = setup_.epoch});
  // Not this reader's delivery: done() counts it off like one of an earlier consumer.
  if (lanes_.push(key, KeyLanes::Item{.message = std::move(message), .generation = UINT64_MAX}))
    ready.push_back(std::move(key));
}

void PartitionReader::read_by_gets(std::vector<std::string>& ready) {
  constexpr size_t kGetsPerTick = 256;
  const std::string filter = setup_.plan->filter(setup_.partition);
  for (size_t n = 0; n < kGetsPerTick && !retired_; ++n) {
    uint64_t after = 0;
    {
      std::lock_guard lock(*setup_.mu);
      if (lanes_.waiting() >= static_cast<size_t>(setup_.window)) return;
      after = lanes_.read_to();
    }
    auto m = setup_.api->get_message(setup_.stream, after + 1, filter);
    if (!m) return;  // none yet, or no answer: the next tick asks again
    std::lock_guard lock(*setup_.mu);
    if (retired_ || engine_ || lanes_.read_to() != after) return;
    push_stored_locked(std::move(*m), ready);
    ++inherited_;
  }
}

namespace {

// `ask` for each of `names`, several at once (a name whose server does not answer costs one
// timeout for them all); the answers in the order of `names`. The last of each group is asked
// on this thread while the others are in flight.
template <typename T>
std::vector<Result<T>> ask_at_once(const std::vector<std::string>& names,
                                   const std::function<Result<T>(const std::string&)>& ask) {
  constexpr size_t kAtOnce = 8;  // calls in flight, at most
  std::vector<Result<T>> out;
  for (size_t first = 0; first < names.size(); first += kAtOnce) {
    const size_t last = std::min(names.size(), first + kAtOnce) - 1;
    std::vector<std::future<Result<T>>> answers;
    for (size_t i = first; i < last; ++i) {
      try {
        answers.push_back(std::async(std::launch::async, ask, names[i]));
      } catch (const std::system_error&) {  // no thread to spare: asked here, in turn
        answers.push_back(std::async(std::launch::deferred, ask, names[i]));
      }
    }
    Result<T> here = ask(names[last]);
    for (auto& answer : answers) out.push_back(answer.get());
    out.push_back(std::move(here));
  }
  return out;
}

}  // namespace

EarlierFloors earlier_floors(const std::vector<std::string>& consumers, const LookUp& look_up) {
  EarlierFloors floors;
  for (const auto& info : ask_at_once<nats::ConsumerInfo>(consumers, look_up)) {
    if (!info) continue;
    floors.highest = std::max(floors.highest, info->ack_floor_stream_seq);
    floors.lowest = std::min(floors.lowest, info->ack_floor_stream_seq);
  }
  return floors;
}

Result<std::vector<nats::StoredMessage>> read_delivered(const GetNext& get, uint64_t floor,
                                                        uint64_t done, uint64_t delivered,
                                                        uint64_t pending) {
  std::vector<nats::StoredMessage> out;
  uint64_t found = 0;
  for (uint64_t seq = floor + 1; seq <= delivered;) {
    auto m = get(seq);
    if (!m && m.error().is_jetstream(nats::kJsNoMessageFound)) break;
    if (!m) return m.error();
    if (m->seq > delivered) break;
    seq = m->seq + 1;
    if (++found > pending) break;  // wrong already: no need to read the rest
    if (m->seq > done) out.push_back(std::move(*m));
  }
  if (found != pending)
    return Error{make_error_code(Errc::protocol),
                 "the stream holds " + std::string(found > pending ? "more than " : "") +
                     std::to_string(found > pending ? pending : found) +
                     " of the partition's messages after the ack floor up to sequence " +
                     std::to_string(delivered) + " where the consumer has " +
                     std::to_string(pending) + " waiting for an ack"};
  return out;
}

Result<void> PartitionReader::adopt(std::vector<std::string>& ready) {
  nats::JetStreamApi& api = *setup_.api;
  auto info = api.consumer_info(setup_.stream, setup_.adopt);
  if (!info) return info.error();
  const std::string filter = setup_.plan->filter(setup_.partition);
  const bool work_queue = setup_.retention == nats::RetentionPolicy::work_queue;
  const auto ack = work_queue ? nats::AckPolicy::explicit_ack : nats::AckPolicy::all;
  if (!info->is_pull() || info->config.filter_subject != filter || info->config.ack_policy != ack)
    return Result<void>(Errc::invalid_argument, setup_.adopt + " is not a reader of the partition");
  // Delivered to the last owner and not done: read again, in stream order, before any delivery.
  const uint64_t done = std::max(setup_.checkpoint, info->ack_floor_stream_seq);
  auto unfinished = read_delivered(
      [&](uint64_t seq) { return api.get_message(setup_.stream, seq, filter); },
      info->ack_floor_stream_seq, done, info->delivered_stream_seq, info->num_ack_pending);
  if (!unfinished) return unfinished.error();
  std::lock_guard lock(*setup_.mu);
  lanes_ = KeyLanes(done);
  for (auto& m : *unfinished) push_stored_locked(std::move(m), ready);
  inherited_ = lanes_.waiting();
  consumer_ = setup_.adopt;
  cursor_.resume(info->delivered_consumer_seq, info->num_pending);
  next_sweep_ = {};  // the partition's other consumers go, off the way of reading
  return {};
}

void PartitionReader::sweep() {
  if (retired_) return;
  next_sweep_ = std::chrono::steady_clock::now() + kSweepEvery;
  auto names = setup_.api->consumer_names(setup_.stream);
  if (!names) return;
  const std::string current = current_consumer();
  for (const auto& name : *names)
    if (of_partition(name) && name != current &&
        std::find(to_delete_.begin(), to_delete_.end(), name) == to_delete_.end())
      to_delete_.push_back(name);
}

Result<void> PartitionReader::make_consumer(uint64_t start) {
  nats::JetStreamApi& api = *setup_.api;
  const std::string name = consumer_name(generation_);
  const nats::ConsumerConfig c = reader_consumer_config(
      {.name = name,
       .description = partition_description(setup_.spec->name, setup_.partition),
       .filter = setup_.plan->filter(setup_.partition),
       .start = start,
       .work = setup_.spec->name,
       .partition = setup_.partition,
       .epoch = setup_.epoch,
       .work_queue = setup_.retention == nats::RetentionPolicy::work_queue});
  // A work-queue stream admits one consumer per subject: the old ones go first. Otherwise the
  // new one comes first (they go on the next tick), so an interest stream never lacks a
  // consumer of the partition, and reading does not wait for their deletion.
  const bool work_queue = setup_.retention == nats::RetentionPolicy::work_queue;
  if (work_queue) {
    delete_old_consumers();
    if (!to_delete_.empty())
      return Result<void>(Errc::timeout, "cannot delete consumer " + to_delete_.front());
  }
  auto made = api.create_consumer(setup_.stream, c);
  if (!made) {
    // It may exist all the same (an answer lost in a timeout), made from another start: the next
    // try takes a new name, and this one goes with the old consumers.
    to_delete_.push_back(name);
    std::lock_guard lock(*setup_.mu);
    ++generation_;
    return made.error();
  }
  std::lock_guard lock(*setup_.mu);
  consumer_ = name;
  return {};  // the older consumers go on the next tick, once this one is read
}

void PartitionReader::delete_old_consumers() {
  if (retired_) return;
  const std::string current = current_consumer();
  std::vector<std::string> old;
  for (const auto& name : to_delete_)
    if (name != current && name != consumer_name(generation_)) old.push_back(name);
  const auto gone = ask_at_once<void>(old, [this](const std::string& name) {
    return setup_.api->delete_consumer(setup_.stream, name);
  });
  std::vector<std::string> left;
  for (size_t i = 0; i < old.size(); ++i)
    if (!gone[i] && !gone[i].error().is_consumer_not_found()) left.push_back(old[i]);
  to_delete_ = std::move(left);
}

Result<void> PartitionReader::start_engine() {
  consume::PullEngine::Options o;
  o.stream = setup_.stream;
  o.consumer = current_consumer();
  o.batch = setup_.window;
  o.expires = setup_.spec->flow.pull_expires;
  o.heartbeat = heartbeat_of(*setup_.spec);
  o.ack_wait = milliseconds(0);  // the log rule finds what a gap lost
  auto engine = std::make_unique<consume::PullEngine>(
      std::make_unique<consume::ConnectionInboxLink>(*setup_.connection), o,
      [this](std::vector<nats::InboundMessage>& batch) { deliver_(*this, batch); },
      [this](const consume::PullStatus& s) {
        if (s.signal == consume::PullSignal::consumer_deleted ||
            s.signal == consume::PullSignal::no_responders) {
          std::lock_guard lock(signal_mu_);
          lost_consumer_ = true;
        }
      });
  consume::PullEngine* started = engine.get();
  watch_ = ReaderWatch(watch_period(*setup_.spec));
  {
    std::lock_guard lock(*setup_.mu);
    engine_ = std::move(engine);
    engine_->set_window(
        static_cast<int>(std::max<int64_t>(1, setup_.window - static_cast<int64_t>(inherited_))));
  }
  return started->start();
}

void PartitionReader::stop_engine() {
  std::unique_ptr<consume::PullEngine> engine;
  {
    std::lock_guard lock(*setup_.mu);
    engine = std::move(engine_);
  }
  if (engine) engine->stop();  // waits for a callback under way, which takes the lock
}

void PartitionReader::accept(std::vector<nats::InboundMessage>& batch,
                             std::vector<std::string>& ready) {
  for (auto& in : batch) {
    auto d = consume::parse_ack_subject(in.reply);
    const bool ours = d && d->consumer == consumer_ && engine_;
    if (!ours) continue;
    const auto step = cursor_.follow(d->consumer_seq, d->pending, d->stream_seq, lanes_.read_to());
    if (step == LogCursor::Step::hole) continue;  // tick() rewinds
    if (step == LogCursor::Step::repeat) {        // taken already: the checkpoint's ack covers it
      engine_->message_done();
      continue;
    }
    if (d->stream_seq > acked_) replies_[d->stream_seq] = in.reply;
    if (d->stream_seq <= lanes_.read_to()) {  // known: done, or waiting in its lane
      engine_->message_done();
      continue;
    }
    std::string key = key_of(in.subject);
    d->delivered = 1;
    d->consumer = prefix_;
    Message m(std::move(in.subject), std::move(in.data), std::move(in.headers), std::move(*d), {},
              control_, FencingToken{.partition = setup_.partition, .epoch = setup_.epoch});
    if (lanes_.push(key, KeyLanes::Item{.message = std::move(m), .generation = generation_}))
      ready.push_back(std::move(key));
  }
}

bool PartitionReader::done(const std::string& key) {
  if (!lanes_.has(key)) return false;  // cleared meanwhile: the next owner reads it again
  if (lanes_.front(key).generation == generation_) {
    if (engine_) engine_->message_done();
  } else if (inherited_ > 0) {
    --inherited_;
    if (engine_)
      engine_->set_window(
          static_cast<int>(std::max<int64_t>(1, setup_.window - static_cast<int64_t>(inherited_))));
  }
  return lanes_.pop(key);
}

void PartitionReader::tick(std::vector<std::string>& ready) {
  const auto now = std::chrono::steady_clock::now();
  bool lost = false;
  {
    std::lock_guard lock(signal_mu_);
    lost = std::exchange(lost_consumer_, false);
  }
  std::string why;
  bool missed = false;
  consume::PullEngine* engine = nullptr;
  uint64_t read_to = 0;
  bool room = false;
  {
    std::lock_guard lock(*setup_.mu);
    if (cursor_.hole()) why = cursor_.hole_why();
    engine = engine_.get();
    if (engine) missed = engine->heartbeat_missed();
    if (why.empty() && engine && now - acked_at_ >= kAckEvery) ack_checkpoint_locked();
    read_to = lanes_.read_to();
    room = lanes_.waiting() < static_cast<size_t>(setup_.window);
  }
  if (why.empty() && !engine) {
    read_by_gets(ready);
    if (now < next_make_) return;  // the broker refused it lately: try again later
    why = "its consumer could not be made";
  }
  // Silence or a status that says the consumer is gone: a leader election looks the same for a
  // while. Only a lookup that finds no consumer makes a new one; otherwise pull afresh.
  if (why.empty() && (lost || missed) && now >= next_lookup_) {
    next_lookup_ = now + std::max<milliseconds>(heartbeat_of(*setup_.spec), milliseconds(1000));
    auto info = setup_.api->consumer_info(setup_.stream, current_consumer());
    if (!info && info.error().is_consumer_not_found())
      why = "its consumer is gone";
    else
      engine->restart_pulls();
  }
  if (why.empty() && engine) why = look(now, read_to, room);
  if (retired_) return;
  if (!why.empty()) return rewind(why);
  if (reconnected_.exchange(false)) engine->restart_pulls();
  engine->tick();  // only this thread replaces the engine
  if (now >= next_sweep_) sweep();
  if (!to_delete_.empty()) delete_old_consumers();
}

std::string PartitionReader::look(std::chrono::steady_clock::time_point now, uint64_t read_to,
                                  bool room) {
  if (!watch_.look_due(now, read_to, room)) return {};
  auto next =
      setup_.api->get_message(setup_.stream, read_to + 1, setup_.plan->filter(setup_.partition));
  if (!next && !next.error().is_jetstream(nats::kJsNoMessageFound)) return {};  // no answer
  if (!watch_.unserved(next ? next->seq : 0)) return {};
  return "its consumer delivers nothing while stream sequence " + std::to_string(watch_.waiting()) +
         " waits";
}

void PartitionReader::ack_checkpoint_locked() {
  acked_at_ = std::chrono::steady_clock::now();
  const uint64_t checkpoint = lanes_.checkpoint();
  auto end = replies_.upper_bound(checkpoint);
  if (end == replies_.begin()) return;
  // AckAll: the newest delivery at or below the checkpoint acks the others; explicit: each.
  if (setup_.retention == nats::RetentionPolicy::work_queue)
    for (auto it = replies_.begin(); it != end; ++it)
      (void)setup_.connection->publish(it->second, std::string(consume::kAckBody));
  else
    (void)setup_.connection->publish(std::prev(end)->second, std::string(consume::kAckBody));
  acked_ = std::prev(end)->first;
  replies_.erase(replies_.begin(), end);
}

void PartitionReader::rewind(const std::string& why) {
  last_rewind_why_ = why;
  stop_engine();
  uint64_t start = 0;
  {
    std::lock_guard lock(*setup_.mu);
    ack_checkpoint_locked();
    // Everything after the checkpoint is read again: what is known is skipped, the rest taken
    // (from open()'s start when its consumer was never made: what it meant to ack again).
    start = std::min(lanes_.checkpoint() + 1, unmade_start_ ? unmade_start_ : UINT64_MAX);
    if (!consumer_.empty()) to_delete_.push_back(consumer_);
    consumer_.clear();
    ++generation_;
    inherited_ = lanes_.waiting();
    cursor_.reset();
    replies_.clear();
  }
  ++rewinds_;
  if (auto made = make_consumer(start); !made) return make_failed(made.error().describe());
  unmade_start_ = 0;
  make_backoff_ = milliseconds(125);
  (void)start_engine();
}

void PartitionReader::stop() {
  {
    std::lock_guard lock(*setup_.mu);
    ack_checkpoint_locked();
  }
  stop_engine();
}

}  // namespace natsfleet::fleet
