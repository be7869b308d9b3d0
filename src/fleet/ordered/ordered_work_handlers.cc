// OrderedWork's handler side: ready lanes to handler threads, a handler's verdict back to its
// lane (done, retried in place, set aside as a dead letter). Ownership, readers and leases are
// in ordered_work.cc.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/backoff.h"
#include "base/log_event.h"
#include "fleet/dead_letter_copy.h"
#include "fleet/handler_call.h"
#include "fleet/ordered/ordered_work.h"
#include "fleet/ordered/partition_reader.h"

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;

// A handler not started because the lease may have lapsed looks again this soon.
constexpr milliseconds kLeaseRecheck{100};
// A dead letter's store: one that times out may have been stored, and is stored again.
constexpr milliseconds kDeadLetterTimeout{5000};

// min on the first attempt, doubling with each after it, capped at max.
milliseconds doubling(milliseconds min, milliseconds max, int attempt) {
  return base::exponential_delay(min, max, static_cast<uint64_t>(std::max(attempt - 1, 0)));
}

}  // namespace

bool OrderedWork::next_ready(std::unique_lock<std::mutex>& lock, Ready& out) {
  (void)lock;
  auto lane = schedule_.next(Clock::now(), [this](const Ready& r) {
    auto it = owned_.find(r.partition);
    if (it == owned_.end() || it->second.reader.get() != r.reader) return false;  // given up
    return it->second.reader->lanes().has(r.key);
  });
  if (!lane) return false;
  out = std::move(*lane);
  return true;
}

void OrderedWork::wake_later(Ready lane, milliseconds delay) {
  schedule_.later(std::move(lane), Clock::now() + delay);
  wake_.notify_all();
}

void OrderedWork::work_loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    Ready lane;
    if (next_ready(lock, lane)) {
      run_one(lock, std::move(lane));
      continue;
    }
    if (const auto due = schedule_.next_due())
      wake_.wait_until(lock, *due);
    else
      wake_.wait(lock);
  }
}

void OrderedWork::run_one(std::unique_lock<std::mutex>& lock, Ready lane) {
  auto it = owned_.find(lane.partition);
  if (!leases_->may_act(lane.partition)) {
    wake_later(std::move(lane), kLeaseRecheck);
    return;
  }
  KeyLanes::Item& item = it->second.reader->lanes().front(lane.key);
  const Message message = item.message;
  const int rejections = item.rejections;
  const int64_t retried_at = item.retried_at;
  ++it->second.running;
  schedule_.start(lane);
  lock.unlock();

  ++status_.counters.received;
  if (rejections > 0) ++status_.counters.redelivered;
  const Disposition outcome = judge(message, lane.partition, rejections, retried_at);

  lock.lock();
  schedule_.finished(lane);
  if (stopping_ && !schedule_.any_running()) wake_.notify_all();  // await_handlers()
  it = owned_.find(lane.partition);
  if (it == owned_.end() || it->second.reader.get() != lane.reader) return;  // given up meanwhile
  --it->second.running;
  settle_lane(*it->second.reader, std::move(lane), outcome, rejections);
}

Disposition OrderedWork::judge(const Message& message, int partition, int rejections,
                               int64_t retried_at) {
  using Kind = Disposition::Kind;
  Disposition outcome = call_work_handler(handler_, message, status_, {});
  // The next message of its key waits for this verdict: it is the handler's return.
  if (outcome.kind() == Kind::later)
    outcome = Disposition::nak().because(
        "the handler returned Disposition::later(), which ordered work does not take (a key's "
        "next message waits for this one's verdict)");
  // A retry while other messages succeed since its last one: this message is the problem, not
  // the downstream (the contract of Disposition::retry), so it uses a delivery.
  if (outcome.kind() == Kind::retry && retried_at != 0 && last_success_.load() > retried_at)
    outcome = Disposition::nak(outcome.delay())
                  .because("failed again while other messages succeeded: " + outcome.reason());
  const bool rejected = outcome.kind() == Kind::nak;
  if (outcome.kind() != Kind::term && !(rejected && rejections + 1 >= spec_.failure.max_deliver))
    return outcome;
  const std::string reason =
      !outcome.reason().empty()
          ? outcome.reason()
          : (rejected ? "rejected " + std::to_string(rejections + 1) + " times (max_deliver)"
                      : std::string("terminated by the handler"));
  if (auto set_aside = this->set_aside(message, partition, reason); !set_aside)
    return Disposition::retry().because("cannot store the dead letter: " +
                                        set_aside.error().describe());
  return Disposition::term().because(reason);
}

Result<void> OrderedWork::set_aside(const Message& message, int partition,
                                    const std::string& reason) {
  if (!spec_.failure.dead_letter.empty()) {
    auto stored =
        publish_dead_letter(transport_,
                            dead_letter_copy(message, spec_.failure.dead_letter, spec_.name, reason,
                                             std::chrono::system_clock::now()),
                            kDeadLetterTimeout);
    if (!stored) return stored;
    ++status_.counters.dead_lettered;
  }
  ++status_.counters.termed;
  base::log_event(*ctx_.log, spdlog::level::err,
                  {{"work", spec_.name},
                   {"event", "terminated"},
                   {"stream", stream_},
                   {"stream_seq", message.stream_seq()},
                   {"partition", partition},
                   {"error", reason}},
                  "work {}: stream sequence {} (subject {}) set aside: {}", spec_.name,
                  message.stream_seq(), message.subject(), reason);
  return {};
}

void OrderedWork::settle_lane(PartitionReader& reader, Ready lane, const Disposition& outcome,
                              int rejections) {
  using Kind = Disposition::Kind;
  switch (outcome.kind()) {
    case Kind::ack:
    case Kind::term:
      if (outcome.kind() == Kind::ack) {
        ++status_.counters.acked;
        last_success_ = Clock::now().time_since_epoch().count();
      }
      if (retry_streak_ > 0) {
        retry_streak_ = 0;
        status_.set_downstream(false, {}, 0);
      }
      if (reader.done(lane.key)) schedule_.ready(std::move(lane));
      wake_.notify_all();
      return;
    case Kind::retry:  // the lane waits, its message first, and uses no delivery
      ++status_.counters.retried;
      ++retry_streak_;
      if (reader.lanes().has(lane.key))
        reader.lanes().front(lane.key).retried_at = Clock::now().time_since_epoch().count();
      status_.set_downstream(true, outcome.reason(), schedule_.waiting() + 1);
      wake_later(std::move(lane),
                 std::max(outcome.delay(), doubling(spec_.failure.retry_min,
                                                    spec_.failure.retry_max, retry_streak_)));
      return;
    case Kind::later:  // not reached: judge() turns it into a rejection
    case Kind::nak:
      ++status_.counters.naked;
      if (!reader.lanes().has(lane.key)) return;
      reader.lanes().front(lane.key).rejections = rejections + 1;
      wake_later(std::move(lane), std::max(outcome.delay(), doubling(spec_.failure.nak_backoff_min,
                                                                     spec_.failure.nak_backoff_max,
                                                                     rejections + 1)));
      return;
  }
}

}  // namespace natsfleet::fleet
