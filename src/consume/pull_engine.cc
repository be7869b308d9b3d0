#include "consume/pull_engine.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace natsfleet::consume {

PullEngine::PullEngine(std::unique_ptr<InboxLink> link, Options options, Deliver deliver,
                       Signal signal)
    : link_(std::move(link)),
      options_([&] {
        // The broker refuses a heartbeat larger than half the expiry.
        options.expires = std::max(options.expires, options.heartbeat * 3);
        options.batch = std::max(options.batch, 1);
        return options;
      }()),
      deliver_(std::move(deliver)),
      signal_(std::move(signal)),
      pull_subject_("$JS.API.CONSUMER.MSG.NEXT." + options_.stream + "." + options_.consumer),
      gap_after_(options_.ack_wait.count() > 0
                     ? std::max(options_.ack_wait / 2, options_.heartbeat * 3)
                     : std::chrono::milliseconds(0)),
      flow_({.window = options_.batch,
             .expires = options_.expires,
             .heartbeat = options_.heartbeat,
             .gap_after = gap_after_}) {}

PullEngine::~PullEngine() {
  stop();
  if (reader_.joinable()) reader_.join();
}

Result<void> PullEngine::start() {
  {
    std::lock_guard lock(mu_);
    running_ = true;
    flow_.forget_requests(now());
  }
  if (auto subscribed = subscribe_inbox(); !subscribed) {
    std::lock_guard lock(mu_);
    running_ = false;
    return subscribed.error();
  }
  if (!options_.owner_reads) {
    std::lock_guard lock(mu_);
    reader_ = std::thread([this] { read_until_stopped(); });
  }
  refill();
  return {};
}

Result<void> PullEngine::subscribe_inbox() {
  const std::string inbox = link_->new_inbox();
  auto sub = link_->listen(inbox);
  if (!sub) return sub.error();
  Listenings freed;
  {
    std::lock_guard lock(mu_);
    if (!running_) return {};
    ++generation_;
    inbox_ = inbox;
    retire_locked(std::move(subscription_));
    subscription_ = std::move(sub.value());
    new_inbox_due_ = false;
    flow_.new_inbox(now());
    freed = freeable_locked();
  }
  changed_.notify_all();
  return {};  // `freed` goes outside the lock: freeing one may wait for the broker
}

void PullEngine::retire_locked(std::unique_ptr<InboxLink::Listening> sub) {
  if (!sub) return;
  sub->close();
  retired_.push_back(std::move(sub));
}

PullEngine::Listenings PullEngine::freeable_locked() {
  if (reading_) return {};
  return std::exchange(retired_, {});
}

void PullEngine::stop() {
  Listenings freed;
  std::thread reader;
  {
    std::unique_lock lock(mu_);
    running_ = false;
    retire_locked(std::move(subscription_));
    changed_.notify_all();
    // A read under way ends soon: its inbox is closed. One on this thread ends after this.
    const auto self = std::this_thread::get_id();
    read_done_.wait(lock, [&] { return !reading_ || reader_id_ == self; });
    freed = freeable_locked();
    if (reader_.joinable() && reader_.get_id() != self) reader = std::move(reader_);
  }
  if (reader.joinable()) reader.join();
}

void PullEngine::drain() {
  while (read_burst(std::chrono::milliseconds(0)) > 0) {
  }
}

int PullEngine::read_burst(std::chrono::milliseconds wait) {
  InboxLink::Listening* sub = nullptr;
  uint64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    if (!running_ || reading_ || !subscription_) return -1;
    reading_ = true;
    reader_id_ = std::this_thread::get_id();
    sub = subscription_.get();
    generation = generation_;
  }
  struct ReadEnd {
    PullEngine& engine;
    ~ReadEnd() {
      engine.read_buffer_.clear();
      {
        std::lock_guard lock(engine.mu_);
        engine.reading_ = false;
        engine.reader_id_ = {};
      }
      engine.read_done_.notify_all();
    }
  } end{*this};
  const bool open = sub->read(read_buffer_, wait);
  const int got = static_cast<int>(read_buffer_.size());
  if (got > 0) on_batch(read_buffer_, generation);
  return open ? got : -1;
}

void PullEngine::read_until_stopped() {
  // Long: a closed inbox or stop() ends a waiting read at once.
  constexpr std::chrono::milliseconds kWait{1000};
  for (;;) {
    uint64_t seen = 0;
    {
      std::lock_guard lock(mu_);
      if (!running_) return;
      seen = generation_;
    }
    if (read(kWait)) continue;
    // The inbox closed (a fresh one follows) or the connection is gone: wait for a change.
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, kWait, [&] { return !running_ || generation_ != seen; });
  }
}

void PullEngine::stop_pulling() {
  std::lock_guard lock(mu_);
  pulling_ = false;
}

int64_t PullEngine::outstanding() const {
  std::lock_guard lock(mu_);
  return flow_.requested();
}

void PullEngine::on_batch(std::vector<nats::InboundMessage>& batch, uint64_t generation) {
  bool released = false;
  std::vector<PullStatus> signals;
  size_t kept = 0;  // ordinary messages to deliver move to the front, in order
  {
    std::lock_guard lock(mu_);
    if (!running_) return;
    const auto at = now();  // one clock read per burst
    for (auto& msg : batch) {
      // From an old inbox, or after a gap (which marks the inbox for replacement): stale.
      if (generation != generation_ || new_inbox_due_ || gap_locked(at)) {
        if (msg.status == 0) ++stale_dropped_;
        continue;
      }
      if (msg.status == 0) {
        served_at_ = at;
        msg.pulled_at = flow_.pulled_since();
        flow_.delivered(at);
        if (&batch[kept] != &msg) batch[kept] = std::move(msg);
        ++kept;
        continue;
      }
      PullStatus status = classify_pull_status(msg.status, msg.description, msg.headers);
      flow_.heard(at);
      if (status.signal != PullSignal::no_responders) served_at_ = at;
      switch (status.signal) {
        case PullSignal::heartbeat:
        case PullSignal::no_messages:
        case PullSignal::other:
          break;
        case PullSignal::request_expired:
        case PullSignal::request_done:
          flow_.released(status.pending_messages);
          released = true;
          break;
        default:
          signals.push_back(std::move(status));
          break;
      }
    }
  }
  batch.resize(kept);
  if (!batch.empty()) deliver_(batch);
  if (released) refill();
  for (const auto& status : signals) signal_(status);
}

void PullEngine::message_done() {
  int64_t want = 0;
  std::string reply;
  {
    std::lock_guard lock(mu_);
    flow_.done();
    want = next_pull_locked(reply);
  }
  if (want > 0) send_pull(want, reply);
}

void PullEngine::message_back() {
  std::lock_guard lock(mu_);
  flow_.taken();
}

bool PullEngine::gap_locked(Clock::time_point at) {
  if (!flow_.gap(at)) return false;
  new_inbox_due_ = true;
  return true;
}

void PullEngine::restart_pulls() {
  bool resubscribe = false;
  {
    std::lock_guard lock(mu_);
    // Restarting after a silence long enough to be a gap: what the old requests still bring
    // may be stale, so they get no listener.
    resubscribe = gap_locked(now()) || new_inbox_due_;
    flow_.forget_requests(now());
  }
  if (resubscribe) (void)subscribe_inbox();
  refill();
}

void PullEngine::tick() {
  bool resubscribe = false;
  Listenings freed;
  {
    std::lock_guard lock(mu_);
    resubscribe = running_ && (gap_locked(now()) || new_inbox_due_);
    freed = freeable_locked();
  }
  freed.clear();
  // A failure leaves new_inbox_due_ set: the next tick tries again.
  if (resubscribe) (void)subscribe_inbox();
  {
    std::lock_guard lock(mu_);
    // Requests a restarted broker forgot never report back: they must not hold the pipeline.
    flow_.expire(now());
  }
  refill();
}

bool PullEngine::heartbeat_missed() const {
  std::lock_guard lock(mu_);
  return running_ && flow_.heartbeat_missed(now());
}

void PullEngine::set_window(int messages) {
  std::lock_guard lock(mu_);
  flow_.set_window(messages);
}

void PullEngine::hold_back(bool on) {
  {
    std::lock_guard lock(mu_);
    flow_.hold_back(on);
  }
  refill();
}

void PullEngine::step_back(bool on) {
  bool resubscribe = false;
  {
    std::lock_guard lock(mu_);
    if (stepped_back_ == on) return;
    stepped_back_ = on;
    // Until the fresh inbox listens, what the old one brings is dropped as stale (the broker
    // redelivers it after ack_wait, to whoever asks); a failure leaves it to tick().
    resubscribe = on && running_;
    if (resubscribe) new_inbox_due_ = true;
  }
  if (resubscribe) (void)subscribe_inbox();
  refill();
}

int PullEngine::window() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(flow_.window());
}

int64_t PullEngine::buffered() const {
  std::lock_guard lock(mu_);
  return flow_.in_hand();
}

uint64_t PullEngine::pulls_sent() const {
  std::lock_guard lock(mu_);
  return flow_.pulls();
}

uint64_t PullEngine::gaps() const {
  std::lock_guard lock(mu_);
  return flow_.gaps();
}

uint64_t PullEngine::stale_dropped() const {
  std::lock_guard lock(mu_);
  return stale_dropped_;
}

PullEngine::Clock::time_point PullEngine::last_served() const {
  std::lock_guard lock(mu_);
  return served_at_;
}

std::string PullEngine::pull_body(int64_t batch) const {
  using std::chrono::nanoseconds;
  nlohmann::json body = {
      {"batch", batch},
      {"expires", std::chrono::duration_cast<nanoseconds>(options_.expires).count()},
      {"idle_heartbeat", std::chrono::duration_cast<nanoseconds>(options_.heartbeat).count()},
  };
  return body.dump();
}

int64_t PullEngine::next_pull_locked(std::string& reply) {
  if (!running_ || !pulling_ || stepped_back_ || new_inbox_due_ || !flow_.pull_due()) return 0;
  const int64_t want = flow_.next_pull(now());
  if (want > 0) reply = inbox_;
  return want;
}

void PullEngine::send_pull(int64_t want, const std::string& reply) {
  // While disconnected nats.c would keep the pull and send it after the reconnect, for an inbox
  // that a gap may have replaced by then: the broker would hand what it asks for to nobody. The
  // reconnect pulls afresh (restart_pulls). A failed publish (connection closing) is recovered
  // the same way, or by tick().
  if (!link_->connected() || !link_->publish(pull_subject_, pull_body(want), reply)) {
    std::lock_guard lock(mu_);
    flow_.unsent(want);
  }
}

void PullEngine::refill() {
  int64_t want = 0;
  std::string reply;
  {
    std::lock_guard lock(mu_);
    want = next_pull_locked(reply);
  }
  if (want > 0) send_pull(want, reply);
}

}  // namespace natsfleet::consume
