// natsfleet's view of a nats.c connection: connect without blocking on the broker, reconnect
// for ever, publish, request, subscribe. Callbacks never see nats.c types and never throw into it.
//
//   auto conn = nats::Connection::open(options, events);   // returns at once, connects later
//   auto sub = conn->subscribe("a.b", "", [](nats::InboundMessage m) { ... });
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nats/server_version.h"
#include "natsfleet/broker_auth.h"
#include "natsfleet/error.h"
#include "natsfleet/message.h"

namespace natsfleet::nats {

struct ConnectOptions {
  std::vector<std::string> servers;
  std::string name;
  std::string credentials_file;
  BrokerAuth auth;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::chrono::milliseconds reconnect_wait_min{100};
  std::chrono::milliseconds reconnect_wait_max{2000};
  int max_reconnect = -1;  // -1: never give up
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds ping_interval{20000};
};

// Invoked from nats.c's own threads; keep them short.
struct ConnectionEvents {
  std::function<void()> connected;  // first connect and every reconnect
  std::function<void()> disconnected;
  std::function<void(const std::string& why)> closed;  // for good: no more reconnects
  std::function<void(const std::string&)> async_error;
};

// A message copied out of nats.c. `status` is the NATS status code of a control message
// (100 heartbeat, 404, 408, 409, 503), 0 for an ordinary message.
struct InboundMessage {
  std::string subject;
  std::string reply;
  std::string data;
  Headers headers;
  int status = 0;
  std::string description;
  // When natsfleet took it from nats.c (unset for messages made by hand).
  std::chrono::steady_clock::time_point received{};
  // The last in-progress ack natsfleet sent for it (unset: none); with `received`, how long the
  // broker's ack_wait clock has been running.
  std::chrono::steady_clock::time_point kept_alive{};
  // For a pulled message: when the oldest pull request that could have brought it was sent
  // (unset: unknown). The broker delivered it after that, so its ack_wait started no earlier.
  std::chrono::steady_clock::time_point pulled_at{};
};

using MessageCallback = std::function<void(InboundMessage&&)>;
// Messages that reached this process together, in arrival order: the callee moves out what it
// keeps; the vector is cleared (its capacity kept) once the callback returns.
using BatchCallback = std::function<void(std::vector<InboundMessage>&)>;

enum class ConnectionState { connecting, connected, reconnecting, closed, draining };

// Unsubscribed nats.c subscriptions waiting to be freed (see Subscription).
class Graves;
// nats.c messages copied out and not yet destroyed.
class SpentMessages;

class Subscription {
 public:
  class Slot;
  Subscription(void* handle, std::shared_ptr<Slot> slot, std::shared_ptr<Graves> graves);
  // Unsubscribes; after it returns the callback is never called again. nats.c before 3.6 (Debian
  // 12 has 3.4) reads a subscription it looked up for an inbound message after letting go of the
  // lock that guards the lookup: freed meanwhile, it aborts the process (nats.c issue 637). So
  // the nats.c subscription is freed only after a PING sent after the unsubscribe has its PONG
  // (the reader has passed every message before it), or once the connection is closed; until
  // then it waits in Graves, and the next subscription dropped with the link up frees it.
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  // Stops the callback and removes interest.
  void unsubscribe();

 private:
  void* handle_;  // natsSubscription*
  std::shared_ptr<Slot> slot_;
  std::shared_ptr<Graves> graves_;
};

// A subscription its owner reads (no nats.c delivery thread): messages wait in nats.c's queue
// until read(), so a thread that reads them hands nothing to another to run. One reader at a
// time; close() may come from any thread and wakes a read that waits.
class PolledSubscription {
 public:
  PolledSubscription(void* handle, std::shared_ptr<Graves> graves);
  // Frees the nats.c subscription (as ~Subscription does). No read may be under way.
  ~PolledSubscription();
  PolledSubscription(const PolledSubscription&) = delete;
  PolledSubscription& operator=(const PolledSubscription&) = delete;

  // Appends what waits, up to kMaxBatch messages or kMaxBatchBytes: waits up to `wait` for the
  // first when none does. Each is stamped `received` with the last moment this reader saw the
  // queue empty, or, when the read waited for it, when it came. false once closed.
  bool read(std::vector<InboundMessage>& out, std::chrono::milliseconds wait);
  // Removes interest; a read waiting now returns, and reads after it return false.
  void close();

 private:
  // Appends what a nats.c read returned (`status`, the natsMsg* `raw`); false when closed.
  bool take(int status, void* raw, std::chrono::steady_clock::time_point stamp,
            std::vector<InboundMessage>& out);

  void* handle_;  // natsSubscription*
  std::shared_ptr<Graves> graves_;
  std::unique_ptr<SpentMessages> spent_;
  std::chrono::steady_clock::time_point empty_at_;  // when a read last found nothing waiting
};

class Connection {
 public:
  struct Shared;
  // Starts connecting and returns at once; `events.connected` fires when the broker answers.
  // Fails only on unusable options (bad TLS files, bad credentials path, no servers).
  static Result<std::unique_ptr<Connection>> open(const ConnectOptions& options,
                                                  ConnectionEvents events);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  ConnectionState state() const;
  bool connected() const { return state() == ConnectionState::connected; }
  uint64_t reconnects() const;
  // What nats.c last reported failing on this connection (an authorization refused, a TLS
  // handshake, no server available), or empty.
  std::string last_error() const;

  Result<void> publish(const std::string& subject, const std::string& data,
                       const std::string& reply = {});
  Result<void> publish(const std::string& subject, const std::string& data, const Headers& headers);
  // A request/reply round trip (JetStream API calls). A 503 status is "no responders".
  Result<InboundMessage> request(const std::string& subject, const std::string& data,
                                 std::chrono::milliseconds timeout);
  Result<InboundMessage> request(const std::string& subject, const std::string& data,
                                 const Headers& headers, std::chrono::milliseconds timeout);
  Result<std::unique_ptr<Subscription>> subscribe(const std::string& subject,
                                                  const std::string& queue,
                                                  MessageCallback callback);
  // The same, handing over at once whatever nats.c has queued (at most kMaxBatch messages or
  // kMaxBatchBytes of payload): one call, one lock and one wake-up downstream per burst instead
  // of one per message. A message is held only while nats.c already has the next one queued.
  Result<std::unique_ptr<Subscription>> subscribe_batches(const std::string& subject,
                                                          const std::string& queue,
                                                          BatchCallback callback);
  // A subscription read by its owner (see PolledSubscription).
  Result<std::unique_ptr<PolledSubscription>> subscribe_polled(const std::string& subject);
  static constexpr size_t kMaxBatch = 64;
  static constexpr size_t kMaxBatchBytes = 256 * 1024;
  std::string new_inbox() const;
  // The version of the server this connection is on now, read once per server address (see
  // server_version.h; blocks up to connect_timeout the first time). Errors: not_connected, or
  // read_server_version's.
  [[nodiscard]] Result<ServerVersion> server_version() const;
  Result<void> flush(std::chrono::milliseconds timeout);

  // Drains when connected (pending publishes go out, then it closes), closes otherwise, and
  // returns once the connection is closed or `deadline` has passed (then it closes hard).
  void shutdown(std::chrono::milliseconds deadline);

 private:
  explicit Connection(std::shared_ptr<Shared> shared);
  std::shared_ptr<Shared> shared_;
};

}  // namespace natsfleet::nats
