#include "nats/connection.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "base/backoff.h"
#include "nats/auth.h"
#include "nats/handles.h"
#include "nats/status.h"

namespace natsfleet::nats {

class Graves {
 public:
  void set_connection(natsConnection* nc) { nc_ = nc; }

  // `sub` is unsubscribed: frees it, with every one waiting, once nats.c's reader has passed
  // whatever was sent before; keeps them all when that cannot be known now. What `due` holds
  // when it goes out of scope is freed.
  void bury(natsSubscription* sub) {
    std::vector<SubscriptionPtr> due;
    bool gone = false;
    {
      std::lock_guard lock(mu_);
      gone = reader_gone_;
      due.swap(waiting_);
    }
    due.emplace_back(sub);
    if (gone) return;
    // Every one in `due` was unsubscribed before this PING left; its PONG comes after anything
    // the broker sent them, and the one reader thread handles both in order.
    if (natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED &&
        natsConnection_FlushTimeout(nc_, kFlushTimeout.count()) == NATS_OK)
      return;
    std::lock_guard lock(mu_);
    if (reader_gone_) return;
    std::move(due.begin(), due.end(), std::back_inserter(waiting_));
  }

  // The connection is closed and its reader thread joined: nothing reads a subscription now.
  void reader_gone() {
    std::vector<SubscriptionPtr> due;
    std::lock_guard lock(mu_);
    reader_gone_ = true;
    due.swap(waiting_);
  }

 private:
  static constexpr std::chrono::milliseconds kFlushTimeout{1000};

  natsConnection* nc_ = nullptr;
  std::mutex mu_;
  bool reader_gone_ = false;
  std::vector<SubscriptionPtr> waiting_;
};

struct Connection::Shared {
  std::shared_ptr<Graves> graves = std::make_shared<Graves>();
  ConnectOptions options;
  ConnectionEvents events;
  natsConnection* nc = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  bool closed = false;
  std::atomic<uint64_t> reconnects{0};
  std::atomic<bool> ever_connected{false};
  std::mutex versions_mu;
  std::map<std::string, ServerVersion> versions;  // by the server's URL
  std::string token;  // as last read from options.token_file (nats.c's connecting thread)
};

namespace {

// nats.c's own per-subscription queue (see subscribe()): a backstop, not the working bound.
constexpr int kPendingMessagesLimit = 1'000'000;
constexpr int kPendingBytesLimit = 512 * 1024 * 1024;

// Every exception is stopped here: nothing may unwind into nats.c.
template <typename F>
void guarded(const char* where, F&& f) noexcept {
  try {
    f();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "natsfleet: exception in %s callback: %s\n", where, e.what());
  } catch (...) {
    std::fprintf(stderr, "natsfleet: unknown exception in %s callback\n", where);
  }
}

Connection::Shared* shared_of(void* closure) { return static_cast<Connection::Shared*>(closure); }

void on_connected(natsConnection*, void* closure) {
  auto* s = shared_of(closure);
  guarded("connected", [&] {
    if (s->ever_connected.exchange(true)) s->reconnects.fetch_add(1);
    if (s->events.connected) s->events.connected();
  });
}

void on_disconnected(natsConnection*, void* closure) {
  auto* s = shared_of(closure);
  guarded("disconnected", [&] {
    if (s->events.disconnected) s->events.disconnected();
  });
}

void on_closed(natsConnection* nc, void* closure) {
  auto* s = shared_of(closure);
  guarded("closed", [&] {
    const char* text = nullptr;
    std::string why;
    if (nc && natsConnection_GetLastError(nc, &text) != NATS_OK && text) why = text;
    if (s->events.closed) s->events.closed(why);
  });
  std::lock_guard lock(s->mu);
  s->closed = true;
  s->cv.notify_all();
}

void on_async_error(natsConnection*, natsSubscription*, natsStatus err, void* closure) {
  auto* s = shared_of(closure);
  guarded("error", [&] {
    if (s->events.async_error) s->events.async_error(natsStatus_GetText(err));
  });
}

// Exponential from min to max with +-20% jitter: a fleet of replicas does not reconnect in step.
int64_t reconnect_delay(natsConnection*, int attempts, void* closure) {
  auto* s = shared_of(closure);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const auto delay =
      base::exponential_delay(s->options.reconnect_wait_min, s->options.reconnect_wait_max,
                              attempts > 1 ? static_cast<uint64_t>(attempts - 1) : 0);
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  return static_cast<int64_t>(static_cast<double>(delay.count()) * jitter(rng));
}

Result<void> check(natsStatus s, const char* what) {
  if (s == NATS_OK) return {};
  return status_error(s, what);
}

// The token for this connection attempt: the file's text now, or the last one read when it
// cannot be read (a secret being replaced).
const char* token_from_file(void* closure) {
  auto* s = shared_of(closure);
  guarded("token", [&] {
    if (auto token = read_secret_file(s->options.auth.token_file, "token file")) s->token = *token;
  });
  return s->token.c_str();
}

// The user and password, token or NKey the options name (config validation allows one).
Result<void> set_auth(natsOptions* o, Connection::Shared& shared) {
  const BrokerAuth& options = shared.options.auth;
  if (!options.user.empty()) {
    auto password = read_secret_file(options.password_file, "password file");
    if (!password) return password.error();
    if (auto r = check(natsOptions_SetUserInfo(o, options.user.c_str(), password->c_str()),
                       "user and password");
        !r)
      return r;
  }
  if (!options.token_file.empty()) {
    auto token = read_secret_file(options.token_file, "token file");
    if (!token) return token.error();
    shared.token = *token;
    if (auto r = check(natsOptions_SetTokenHandler(o, token_from_file, &shared), "token"); !r)
      return r;
  }
  if (!options.nkey_seed_file.empty()) {
    auto seed = read_secret_file(options.nkey_seed_file, "NKey seed file");
    if (!seed) return seed.error();
    auto key = nkey_public_key(*seed);
    if (!key)
      return Error{key.error().code, options.nkey_seed_file + ": " + key.error().describe()};
    if (auto r = check(natsOptions_SetNKeyFromSeed(o, key->c_str(), options.nkey_seed_file.c_str()),
                       "nkey");
        !r)
      return r;
  }
  return {};
}

// The credentials file and the user and password, token or NKey the options name.
Result<void> set_credentials(natsOptions* o, Connection::Shared& shared) {
  const std::string& file = shared.options.credentials_file;
  if (!file.empty())
    if (auto r = check(natsOptions_SetUserCredentialsFromFiles(o, file.c_str(), nullptr),
                       "credentials file");
        !r)
      return r;
  return set_auth(o, shared);
}

// TLS, when the options name a CA or a client certificate.
Result<void> set_tls(natsOptions* o, const ConnectOptions& options) {
  if (options.tls_ca.empty() && options.tls_cert.empty()) return {};
  if (auto r = check(natsOptions_SetSecure(o, true), "tls"); !r) return r;
  if (!options.tls_ca.empty())
    if (auto r = check(natsOptions_LoadCATrustedCertificates(o, options.tls_ca.c_str()), "tls ca");
        !r)
      return r;
  if (!options.tls_cert.empty())
    return check(
        natsOptions_LoadCertificatesChain(o, options.tls_cert.c_str(), options.tls_key.c_str()),
        "tls cert/key");
  return {};
}

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

// A message with headers, for the publish and request calls that carry them.
Result<MsgPtr> message_with_headers(const std::string& subject, const std::string& data,
                                    const Headers& headers) {
  natsMsg* raw = nullptr;
  natsStatus s =
      natsMsg_Create(&raw, subject.c_str(), nullptr, data.data(), static_cast<int>(data.size()));
  if (s != NATS_OK) return status_error(s, "message");
  MsgPtr msg(raw);
  for (const auto& [key, values] : headers)
    for (const auto& v : values)
      if ((s = natsMsgHeader_Add(msg.get(), key.c_str(), v.c_str())) != NATS_OK)
        return status_error(s, "message header");
  return msg;
}

}  // namespace

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

Connection::Connection(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

Result<std::unique_ptr<Connection>> Connection::open(const ConnectOptions& options,
                                                     ConnectionEvents events) {
  if (options.servers.empty())
    return Result<std::unique_ptr<Connection>>(Errc::invalid_argument, "no servers");
  auto shared = std::make_shared<Shared>();
  shared->options = options;
  shared->events = std::move(events);

  natsOptions* raw = nullptr;
  if (auto r = check(natsOptions_Create(&raw), "natsOptions_Create"); !r) return r.error();
  OptionsPtr opts(raw);
  std::vector<const char*> urls;
  for (const auto& s : options.servers) urls.push_back(s.c_str());
  void* closure = shared.get();
  natsOptions* o = opts.get();
  const struct {
    natsStatus status;
    const char* what;
  } steps[] = {
      {natsOptions_SetServers(o, urls.data(), static_cast<int>(urls.size())), "servers"},
      {natsOptions_SetName(o, options.name.c_str()), "name"},
      {natsOptions_SetMaxReconnect(o, options.max_reconnect), "max_reconnect"},
      {natsOptions_SetCustomReconnectDelay(o, reconnect_delay, closure), "reconnect delay"},
      {natsOptions_SetTimeout(o, options.connect_timeout.count()), "connect timeout"},
      {natsOptions_SetPingInterval(o, options.ping_interval.count()), "ping interval"},
      {natsOptions_SetMaxPingsOut(o, 2), "max pings out"},
      {natsOptions_SetReconnectBufSize(o, 32 * 1024 * 1024), "reconnect buffer"},
      {natsOptions_SetClosedCB(o, on_closed, closure), "closed callback"},
      {natsOptions_SetDisconnectedCB(o, on_disconnected, closure), "disconnected callback"},
      {natsOptions_SetReconnectedCB(o, on_connected, closure), "reconnected callback"},
      {natsOptions_SetErrorHandler(o, on_async_error, closure), "error handler"},
      {natsOptions_SetRetryOnFailedConnect(o, true, on_connected, closure), "retry connect"},
  };
  for (const auto& step : steps)
    if (auto r = check(step.status, step.what); !r) return r.error();
  if (auto r = set_credentials(o, *shared); !r) return r.error();
  if (auto r = set_tls(o, options); !r) return r.error();

  natsConnection* nc = nullptr;
  natsStatus s = natsConnection_Connect(&nc, o);
  if (s == NATS_OK) {
    shared->ever_connected = true;
  } else if (s != NATS_NOT_YET_CONNECTED) {
    return status_error(s, "connect");
  }
  shared->nc = nc;
  shared->graves->set_connection(nc);
  // The first connect within natsConnection_Connect fires no callback: report it ourselves.
  if (s == NATS_OK && shared->events.connected) guarded("connected", shared->events.connected);
  return std::unique_ptr<Connection>(new Connection(std::move(shared)));
}

Connection::~Connection() {
  shutdown(std::chrono::milliseconds(0));
  shared_->graves->reader_gone();
  natsConnection_Destroy(shared_->nc);
}

ConnectionState Connection::state() const {
  switch (natsConnection_Status(shared_->nc)) {
    case NATS_CONN_STATUS_CONNECTED:
      return ConnectionState::connected;
    case NATS_CONN_STATUS_RECONNECTING:
    case NATS_CONN_STATUS_DISCONNECTED:
      return ConnectionState::reconnecting;
    case NATS_CONN_STATUS_CONNECTING:
      return ConnectionState::connecting;
    case NATS_CONN_STATUS_DRAINING_SUBS:
    case NATS_CONN_STATUS_DRAINING_PUBS:
      return ConnectionState::draining;
    case NATS_CONN_STATUS_CLOSED:
      return ConnectionState::closed;
  }
  return ConnectionState::closed;
}

uint64_t Connection::reconnects() const { return shared_->reconnects.load(); }

std::string Connection::last_error() const {
  const char* text = nullptr;
  const natsStatus s = natsConnection_GetLastError(shared_->nc, &text);
  if (s == NATS_OK) return {};
  return text != nullptr && *text != '\0' ? std::string(text) : std::string(natsStatus_GetText(s));
}

Result<void> Connection::publish(const std::string& subject, const std::string& data,
                                 const std::string& reply) {
  natsStatus s = reply.empty()
                     ? natsConnection_Publish(shared_->nc, subject.c_str(), data.data(),
                                              static_cast<int>(data.size()))
                     : natsConnection_PublishRequest(shared_->nc, subject.c_str(), reply.c_str(),
                                                     data.data(), static_cast<int>(data.size()));
  return check(s, "publish");
}

Result<void> Connection::publish(const std::string& subject, const std::string& data,
                                 const Headers& headers) {
  auto msg = message_with_headers(subject, data, headers);
  if (!msg) return msg.error();
  return check(natsConnection_PublishMsg(shared_->nc, msg->get()), "publish");
}

Result<InboundMessage> Connection::request(const std::string& subject, const std::string& data,
                                           std::chrono::milliseconds timeout) {
  natsMsg* raw = nullptr;
  natsStatus s = natsConnection_Request(&raw, shared_->nc, subject.c_str(), data.data(),
                                        static_cast<int>(data.size()), timeout.count());
  if (s != NATS_OK) return status_error(s, subject.c_str());
  MsgPtr reply(raw);
  InboundMessage in;
  copy_message(reply.get(), in);
  return in;
}

Result<InboundMessage> Connection::request(const std::string& subject, const std::string& data,
                                           const Headers& headers,
                                           std::chrono::milliseconds timeout) {
  auto msg = message_with_headers(subject, data, headers);
  if (!msg) return msg.error();
  natsMsg* reply_raw = nullptr;
  natsStatus s = natsConnection_RequestMsg(&reply_raw, shared_->nc, msg->get(), timeout.count());
  if (s != NATS_OK) return status_error(s, subject.c_str());
  MsgPtr reply(reply_raw);
  InboundMessage in;
  copy_message(reply.get(), in);
  return in;
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

std::string Connection::new_inbox() const {
  natsInbox* raw = nullptr;
  if (natsInbox_Create(&raw) != NATS_OK) return "_INBOX.natsfleet";
  InboxPtr inbox(raw);
  return std::string(inbox.get());
}

Result<ServerVersion> Connection::server_version() const {
  char url[512];
  if (natsConnection_GetConnectedUrl(shared_->nc, url, sizeof url) != NATS_OK || url[0] == '\0')
    return Error{make_error_code(Errc::not_connected), "not connected to a server"};
  {
    std::lock_guard lock(shared_->versions_mu);
    if (auto it = shared_->versions.find(url); it != shared_->versions.end()) return it->second;
  }
  auto version = read_server_version(url, shared_->options.connect_timeout);
  if (!version) return version.error();
  std::lock_guard lock(shared_->versions_mu);
  shared_->versions[url] = *version;
  return *version;
}

Result<void> Connection::flush(std::chrono::milliseconds timeout) {
  return check(natsConnection_FlushTimeout(shared_->nc, timeout.count()), "flush");
}

void Connection::shutdown(std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  ConnectionState st = state();
  if (st == ConnectionState::closed) return;
  // Drain is only legal on a connected connection (nats.c refuses it while reconnecting):
  // then, and when no time is left, close.
  if (st == ConnectionState::connected && deadline.count() > 0 &&
      natsConnection_DrainTimeout(shared_->nc, deadline.count()) == NATS_OK) {
    std::unique_lock lock(shared_->mu);
    shared_->cv.wait_until(lock, until, [&] { return shared_->closed; });
  }
  natsConnection_Close(shared_->nc);
  std::unique_lock lock(shared_->mu);
  // The closed callback runs on nats.c's thread; it must be done before Shared can go away.
  shared_->cv.wait_for(lock, std::chrono::seconds(5), [&] { return shared_->closed; });
}

}  // namespace natsfleet::nats
