// nats::Connection's subscriptions: called back in bursts (Subscription), or read by their owner
// (PolledSubscription).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "nats/connection.h"
#include "nats/connection_internal.h"
#include "nats/status.h"

namespace natsfleet::nats {

void copy_message(natsMsg* msg, InboundMessage& out) {
  out.subject = natsMsg_GetSubject(msg);
  if (const char* reply = natsMsg_GetReply(msg)) out.reply = reply;
  if (int len = natsMsg_GetDataLength(msg); len > 0) out.data.assign(natsMsg_GetData(msg), len);
  const char* status = nullptr;
  if (natsMsgHeader_Get(msg, "Status", &status) == NATS_OK && status) {
    out.status = std::atoi(status);
    const char* description = nullptr;
    if (natsMsgHeader_Get(msg, "Description", &description) == NATS_OK && description)
      out.description = description;
  }
  const char** keys = nullptr;
  int count = 0;
  if (natsMsgHeader_Keys(msg, &keys, &count) != NATS_OK) return;
  for (int i = 0; i < count; ++i) {
    std::string key = keys[i];
    if (key == "Status" || key == "Description") continue;
    const char** values = nullptr;
    int n = 0;
    if (natsMsgHeader_Values(msg, keys[i], &values, &n) == NATS_OK) {
      auto& slot = out.headers[key];
      for (int j = 0; j < n; ++j) slot.emplace_back(values[j]);
      std::free(static_cast<void*>(values));
    }
  }
  std::free(static_cast<void*>(keys));
}

// nats.c messages already copied out, destroyed kSpent at a time (or kSpentBytes of payload):
// each destroy hands a message to nats.c's collector thread, which is woken whenever it sleeps,
// so one at a time costs a wake-up per message.
class SpentMessages {
 public:
  SpentMessages() { spent_.reserve(kSpent); }
  ~SpentMessages() { release(); }
  SpentMessages(const SpentMessages&) = delete;
  SpentMessages& operator=(const SpentMessages&) = delete;

  void add(natsMsg* msg) noexcept {
    spent_.push_back(msg);  // reserved, and released once full: cannot throw
    bytes_ += static_cast<size_t>(std::max(natsMsg_GetDataLength(msg), 0));
    if (spent_.size() == kSpent || bytes_ >= kSpentBytes) release();
  }
  void release() noexcept {
    for (natsMsg* m : spent_) natsMsg_Destroy(m);
    spent_.clear();
    bytes_ = 0;
  }

 private:
  static constexpr size_t kSpent = 256;
  static constexpr size_t kSpentBytes = 1024 * 1024;
  std::vector<natsMsg*> spent_;
  size_t bytes_ = 0;
};

// The callback's home. nats.c holds a heap shared_ptr to it until the subscription completes,
// so a late delivery never touches freed memory; `callback` is kept until the slot dies.
//
// Messages are copied out as they come and handed over in bursts: while nats.c already has the
// next message queued, the copy waits in `batch_`. A burst's messages share one receive time,
// its first's (earlier is the safe side for ack_wait), and nats.c's queue is asked for its
// length only once the messages it counted last time have come.
class Subscription::Slot {
 public:
  explicit Slot(BatchCallback cb) : callback_(std::move(cb)) {
    batch_.reserve(Connection::kMaxBatch);
  }

  void deliver(natsSubscription* sub, natsMsg* raw) noexcept {
    std::lock_guard lock(mu_);
    bool more = false;
    if (active_) {
      guarded("message", [&] {
        if (batch_.empty()) burst_at_ = std::chrono::steady_clock::now();
        auto& in = batch_.emplace_back();
        copy_message(raw, in);
        in.received = burst_at_;
        batch_bytes_ += in.data.size();
        if (queued_behind_ > 0) --queued_behind_;  // this message is one of those counted
        int pending = 0;
        if (queued_behind_ == 0 && natsSubscription_GetPending(sub, &pending, nullptr) == NATS_OK)
          queued_behind_ = std::max(pending, 0);
        more = batch_.size() < Connection::kMaxBatch && batch_bytes_ < Connection::kMaxBatchBytes &&
               queued_behind_ > 0;
      });
    } else {
      batch_.clear();
      batch_bytes_ = 0;
    }
    spent_.add(raw);
    if (more || batch_.empty()) return;  // when more: the next callback follows on this thread
    guarded("message", [&] { callback_(batch_); });
    batch_.clear();
    batch_bytes_ = 0;
  }

  void stop() {
    // A callback that unsubscribes its own subscription must not wait for itself; the flag is
    // read under the lock that thread already holds.
    if (delivering_thread_.load() == std::this_thread::get_id()) {
      active_ = false;
      return;
    }
    std::lock_guard lock(mu_);
    active_ = false;
  }

  static void on_message(natsConnection*, natsSubscription* sub, natsMsg* msg, void* closure) {
    auto* slot = static_cast<std::shared_ptr<Slot>*>(closure)->get();
    slot->delivering_thread_ = std::this_thread::get_id();
    slot->deliver(sub, msg);
    slot->delivering_thread_ = std::thread::id();
  }

  static void on_complete(void* closure) { delete static_cast<std::shared_ptr<Slot>*>(closure); }

 private:
  std::mutex mu_;
  BatchCallback callback_;  // kept until the slot dies: clearing it could free a running lambda
  bool active_ = true;
  std::vector<InboundMessage> batch_;  // copied, not yet handed over
  size_t batch_bytes_ = 0;
  std::chrono::steady_clock::time_point burst_at_{};  // when the burst in `batch_` began
  int queued_behind_ = 0;  // messages nats.c had queued behind the last one counted
  SpentMessages spent_;
  std::atomic<std::thread::id> delivering_thread_{};
};

Subscription::Subscription(void* handle, std::shared_ptr<Slot> slot, std::shared_ptr<Graves> graves)
    : handle_(handle), slot_(std::move(slot)), graves_(std::move(graves)) {}

Subscription::~Subscription() {
  unsubscribe();
  graves_->bury(static_cast<natsSubscription*>(handle_));
}

void Subscription::unsubscribe() {
  slot_->stop();
  // Fails harmlessly when the connection is already closed: the callback is stopped anyway.
  (void)natsSubscription_Unsubscribe(static_cast<natsSubscription*>(handle_));
}

PolledSubscription::PolledSubscription(void* handle, std::shared_ptr<Graves> graves)
    : handle_(handle),
      graves_(std::move(graves)),
      spent_(std::make_unique<SpentMessages>()),
      empty_at_(std::chrono::steady_clock::now()) {}

PolledSubscription::~PolledSubscription() {
  close();
  spent_->release();
  graves_->bury(static_cast<natsSubscription*>(handle_));
}

void PolledSubscription::close() {
  // Fails harmlessly when the connection is already closed.
  (void)natsSubscription_Unsubscribe(static_cast<natsSubscription*>(handle_));
}

namespace {

// Messages nats.c holds for `sub` now (asked first: nats.c formats an error text for every read
// that finds none).
int queued(natsSubscription* sub) {
  int n = 0;
  return natsSubscription_GetPending(sub, &n, nullptr) == NATS_OK ? std::max(n, 0) : 0;
}

}  // namespace

bool PolledSubscription::take(int status, void* raw, std::chrono::steady_clock::time_point stamp,
                              std::vector<InboundMessage>& out) {
  switch (status) {
    case NATS_OK: {
      auto* msg = static_cast<natsMsg*>(raw);
      auto& in = out.emplace_back();
      try {
        copy_message(msg, in);
      } catch (...) {
        natsMsg_Destroy(msg);
        throw;
      }
      in.received = stamp;
      spent_->add(msg);
      return true;
    }
    case NATS_NO_RESPONDERS: {  // nats.c keeps the 503 status message to itself
      auto& in = out.emplace_back();
      in.status = 503;
      in.received = stamp;
      return true;
    }
    case NATS_SLOW_CONSUMER:  // reported once; what is still queued stays readable
    case NATS_TIMEOUT:
      return true;
    default:
      return false;  // closed
  }
}

constexpr int kYieldsBeforeWait = 4;

bool PolledSubscription::read(std::vector<InboundMessage>& out, std::chrono::milliseconds wait) {
  using steady = std::chrono::steady_clock;
  auto* sub = static_cast<natsSubscription*>(handle_);
  const size_t first = out.size();
  size_t bytes = 0;
  auto add = [&](natsStatus s, natsMsg* raw, steady::time_point stamp) {
    if (!take(s, raw, stamp, out)) return false;
    if (s == NATS_OK) bytes += out.back().data.size();
    return true;
  };
  auto room = [&] {
    return out.size() - first < Connection::kMaxBatch && bytes < Connection::kMaxBatchBytes;
  };
  auto stamp = empty_at_;  // what waits came after the queue was last seen empty
  int ready = queued(sub);
  // On a busy inbox the next message usually comes while this thread gives way a few times,
  // which costs less than sleeping and being woken for it.
  for (int i = 0; i < kYieldsBeforeWait && ready == 0 && wait.count() > 0; ++i) {
    std::this_thread::yield();
    ready = queued(sub);
  }
  if (ready == 0) {
    empty_at_ = steady::now();
    if (wait.count() <= 0) return natsSubscription_IsValid(sub);
    natsMsg* raw = nullptr;
    const natsStatus s = natsSubscription_NextMsg(&raw, sub, wait.count());
    stamp = steady::now();  // it came while this read waited
    if (!add(s, raw, stamp)) return false;
    ready = queued(sub);
  }
  while (ready > 0 && room()) {
    for (; ready > 0 && room(); --ready) {
      natsMsg* raw = nullptr;
      const natsStatus s = natsSubscription_NextMsg(&raw, sub, 0);
      if (!add(s, raw, stamp)) return false;
    }
    if (ready == 0) ready = queued(sub);
  }
  if (ready == 0) empty_at_ = steady::now();
  return true;
}

Result<std::unique_ptr<Subscription>> Connection::subscribe(const std::string& subject,
                                                            const std::string& queue,
                                                            MessageCallback callback) {
  return subscribe_batches(subject, queue,
                           [callback = std::move(callback)](std::vector<InboundMessage>& batch) {
                             for (auto& m : batch) callback(std::move(m));
                           });
}

Result<std::unique_ptr<Subscription>> Connection::subscribe_batches(const std::string& subject,
                                                                    const std::string& queue,
                                                                    BatchCallback callback) {
  auto slot = std::make_shared<Subscription::Slot>(std::move(callback));
  auto* closure = new std::shared_ptr<Subscription::Slot>(slot);
  natsSubscription* sub = nullptr;
  natsStatus s = queue.empty() ? natsConnection_Subscribe(&sub, shared_->nc, subject.c_str(),
                                                          Subscription::Slot::on_message, closure)
                               : natsConnection_QueueSubscribe(
                                     &sub, shared_->nc, subject.c_str(), queue.c_str(),
                                     Subscription::Slot::on_message, closure);
  if (s != NATS_OK) {
    delete closure;
    return status_error(s, "subscribe");
  }
  // Flow control is natsfleet's: pulls ask for a bounded window and the callback only hands a
  // message to a bounded queue, so this backstop is far above anything reached in practice
  // (a broadcast burst must not be dropped as slow); it keeps a stalled callback from growing
  // without bound.
  (void)natsSubscription_SetPendingLimits(sub, kPendingMessagesLimit, kPendingBytesLimit);
  (void)natsSubscription_SetOnCompleteCB(sub, Subscription::Slot::on_complete, closure);
  return std::make_unique<Subscription>(sub, std::move(slot), shared_->graves);
}

Result<std::unique_ptr<PolledSubscription>> Connection::subscribe_polled(
    const std::string& subject) {
  natsSubscription* sub = nullptr;
  if (natsStatus s = natsConnection_SubscribeSync(&sub, shared_->nc, subject.c_str()); s != NATS_OK)
    return status_error(s, "subscribe");
  // The owner reads only as far as its window lets the broker send; this is the backstop.
  (void)natsSubscription_SetPendingLimits(sub, kPendingMessagesLimit, kPendingBytesLimit);
  return std::make_unique<PolledSubscription>(sub, shared_->graves);
}

}  // namespace natsfleet::nats
