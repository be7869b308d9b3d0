// The Fleet: one connection, many subscriptions, one supervisor. Declare what the service consumes,
// start, and the fleet binds in the background for as long as it takes.
//
//   natsfleet::Fleet fleet({.name = "mailer", .servers = {"nats://127.0.0.1:4222"}});
//   auto added = fleet.add_work({.name = "mail-relay", .subject = "mail.outgoing"},
//                               [](const natsfleet::Message& m) {
//                                 send(m.data());
//                                 return natsfleet::Disposition::ack();
//                               });
//   if (!added) die(added.error().describe());  // the spec is invalid
//   fleet.on_fatal([](const natsfleet::FatalReport&) { std::exit(70); });
//   if (auto started = fleet.start(); !started) die(started.error().describe());
//   ...
//   fleet.shutdown(std::chrono::seconds(10));
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "natsfleet/broker_auth.h"
#include "natsfleet/error.h"
#include "natsfleet/export.h"
#include "natsfleet/health.h"
#include "natsfleet/message.h"
#include "natsfleet/spec.h"

namespace natsfleet {

enum class LogLevel { trace, debug, info, warn, error, critical };

// One line the fleet logs, as FleetOptions::log_to receives it.
struct LogLine {
  LogLevel level = LogLevel::info;
  std::string_view message{};  // in words, as the text log writes it
  // Its typed fields, in the order they were set (docs/reference/logs.md): work, stream, event,
  // stream_seq, error, ...; numbers in decimal. No secret is ever among them.
  std::vector<std::pair<std::string_view, std::string>> fields{};
};
using LogHandler = std::function<void(const LogLine&)>;

struct TlsFiles {
  std::string ca{};    // trusted CA bundle (PEM)
  std::string cert{};  // client certificate chain (PEM), with key
  std::string key{};
};

struct FleetOptions {
  std::string name = "natsfleet";  // client name, logs, metrics label
  std::vector<std::string> servers{};
  std::string credentials_file{};  // a NATS .creds file (JWT + seed)
  BrokerAuth auth{};
  TlsFiles tls{};
  // Reconnect waits grow from min to max with jitter. Reconnects never stop unless
  // max_reconnect is set to a non-negative number (tests use that to close a connection).
  std::chrono::milliseconds reconnect_wait_min = std::chrono::milliseconds(100);
  std::chrono::milliseconds reconnect_wait_max = std::chrono::seconds(2);
  int max_reconnect = -1;
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(2);
  std::chrono::milliseconds ping_interval = std::chrono::seconds(20);
  std::chrono::milliseconds request_timeout = std::chrono::seconds(2);  // JetStream API calls
  // Binding retries back off between these bounds, with jitter, for ever.
  std::chrono::milliseconds bind_backoff_min = std::chrono::milliseconds(100);
  std::chrono::milliseconds bind_backoff_max = std::chrono::seconds(5);
  // "Consumer missing" is acted on only after this many lookups spread over this window agree:
  // a new JetStream leader may briefly not know a consumer.
  int missing_lookups = 3;
  std::chrono::milliseconds missing_window = std::chrono::seconds(2);
  // How often bound work subscriptions read their consumer's info (ack floor, pending). The ack
  // floor read here is where a recreated consumer starts: more often, fewer replays.
  std::chrono::milliseconds info_interval = std::chrono::seconds(1);
  // A bound work subscription with pending messages and no progress for this long is stalled.
  std::chrono::milliseconds stall_after = std::chrono::seconds(60);
  // A work (or JetStream broadcast) consumer that has served nothing for this long (its pulls find
  // no responder, or its lookups go unanswered, with the broker connected), while its stream
  // answers, is deleted and made anew after the last ack floor: a consumer group the broker left
  // without a leader (its only server gone, or an election that never ends) holds its messages for
  // good otherwise.
  std::chrono::milliseconds replace_unserved_after = std::chrono::seconds(30);
  // A consumer of the wrong shape that a migration replaced is deleted once nobody has been
  // bound to it (no push interest, no waiting pulls) for this long.
  std::chrono::milliseconds retire_grace = std::chrono::seconds(30);
  // A JetStream broadcast's per-replica consumer outlives its replica by this long on the broker.
  std::chrono::milliseconds broadcast_inactive = std::chrono::seconds(60);
  // Where the fleet's log lines go, with their fields; unset, to spdlog's default logger under
  // the fleet's name. Called on the thread that logs (a fleet or nats.c thread), one line at a
  // time: it must return quickly and not call the Fleet. What it throws is dropped.
  LogHandler log_to{};
  LogLevel log_level = LogLevel::info;  // the lowest level log_to receives
};

struct FatalReport {
  std::string subscription{};  // empty when the connection itself is lost
  std::string reason{};
};

// How a Subscription reaches its Fleet: opaque, made by the fleet.
class FleetLink;

// One subscription of a Fleet, as add_work and add_broadcast return it: a handle to drain, stop
// or look at that subscription alone, before or after start(). Copyable; any thread, handlers
// included. It stands for that one subscription: once it was removed (through any handle, or
// Fleet::remove) calls answer invalid_argument, even after a subscription of the same name was
// added again. Once the fleet shuts down drain() and stop() answer shutting_down, and once it is
// gone every call does. A handle made by default stands for none (invalid_argument).
//
//   auto jobs = fleet.add_work(spec, [](const natsfleet::Message&) {
//     return natsfleet::Disposition::ack();
//   });
//   if (!jobs) die(jobs.error().describe());
//   ...
//   if (auto h = jobs->health(); h && h->state == natsfleet::SubscriptionState::stalled)
//     (void)jobs->drain(std::chrono::seconds(10));  // this work alone; the others go on
class NATSFLEET_API Subscription {
 public:
  Subscription() = default;

  const std::string& name() const { return name_; }
  // Stops this subscription alone, as Fleet::remove(name(), deadline) does: no more pulls, its
  // handlers' Message::stop_token() requested, running handlers and deferred verdicts
  // (Disposition::later) awaited until `deadline` and acked, the rest given back to the broker.
  [[nodiscard]] Result<void> drain(std::chrono::milliseconds deadline) const;
  // drain() without waiting: what waits, was held or awaits a verdict goes back to the broker at
  // once, and a handler still running is not waited for.
  [[nodiscard]] Result<void> stop() const;
  // This subscription's part of Fleet::health(); before start() it is `binding`.
  [[nodiscard]] Result<SubscriptionHealth> health() const;

 private:
  friend class Fleet;
  Subscription(std::shared_ptr<FleetLink> link, std::string name, uint64_t id)
      : link_(std::move(link)), name_(std::move(name)), id_(id) {}

  std::shared_ptr<FleetLink> link_;
  std::string name_;
  uint64_t id_ = 0;  // which subscription of that name
};

// What stands behind a PullWork: opaque, made by the fleet.
class PullQueue;

// A work whose messages the application takes with fetch() instead of a handler, for batch
// consumers (take up to 500, write them in one go, ack each): the same shared consumer,
// recovery and bounds as add_work. Each fetched Message is settled once, from any thread, with
// ack(), nak(), term() or settle() (message.h), and kept alive meanwhile up to keep_alive_limit.
// Up to `batch` messages (256 when 0) wait here unfetched; then this replica pulls no more until
// some are fetched. One that waits unfetched past keep_alive_limit goes back to the broker for
// another replica (a fetch skips it). When the work stops (subscription().drain() or stop(),
// Fleet::shutdown, ~Fleet) what waits unfetched goes back to the broker at once; drain waits for
// the verdicts of fetched ones until its deadline, then gives them back too. Copyable; any thread.
//
//   auto orders = fleet.add_pull_work(spec);
//   if (!orders) die(orders.error().describe());
//   while (running) {
//     auto batch = orders->fetch(500, std::chrono::seconds(1));
//     if (!batch) break;  // shutting_down: the work stopped
//     if (write_rows(*batch))
//       for (const auto& m : *batch) (void)m.ack();
//     else
//       for (const auto& m : *batch) (void)m.settle(natsfleet::Disposition::retry());
//   }
class NATSFLEET_API PullWork {
 public:
  PullWork() = default;

  // drain(), stop() and health() of this work, as add_work's handle has them.
  const Subscription& subscription() const { return subscription_; }
  // Up to n messages (at most `batch`): returns once n wait or max_wait has passed, with what
  // waits then (perhaps none). Errors: invalid_argument (n is 0, a PullWork made by default, the
  // work was removed); shutting_down (the work stopped or the fleet shuts down or is gone).
  [[nodiscard]] Result<std::vector<Message>> fetch(std::size_t n,
                                                   std::chrono::milliseconds max_wait) const;

 private:
  friend class Fleet;
  PullWork(Subscription subscription, std::shared_ptr<PullQueue> queue)
      : subscription_(std::move(subscription)), queue_(std::move(queue)) {}

  Subscription subscription_;
  std::shared_ptr<PullQueue> queue_;
};

using WorkHandler = std::function<Disposition(const Message&)>;
using BroadcastHandler = std::function<void(const Message&)>;
using FatalHandler = std::function<void(const FatalReport&)>;

// Thread safety: every member function may be called from any thread, handlers included, at
// the same time as any other, except the destructor: it runs after every other call has
// returned, and not on a fleet thread (a handler or the fatal handler). shutdown() called from
// a handler of this fleet waits out its deadline, since that handler is one it waits for.
class NATSFLEET_API Fleet {
 public:
  explicit Fleet(FleetOptions options);
  // Shuts down (deadline 2 s) when still running, and returns by the deadline of the last
  // shutdown() or remove(). A handler still running then is left to finish: what the fleet owns
  // is freed once it returns, its verdict is dropped (the broker redelivers its message after
  // ack_wait), and it must not call this Fleet; its Message stays safe (calls return errors).
  ~Fleet();
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Declare subscriptions before start(), or add them to a running fleet (they start at once);
  // each returns its Subscription handle.
  // Handlers run on the fleet's threads, up to the spec's concurrency at a time per
  // subscription; they may throw (a work message, or a JetStream broadcast message, is then
  // nak'd with backoff, and terminated after max_deliver). A work handler may return
  // Disposition::later() and settle its Message from any thread (message.h).
  [[nodiscard]] Result<Subscription> add_work(WorkSpec spec, WorkHandler handler);
  [[nodiscard]] Result<Subscription> add_broadcast(BroadcastSpec spec, BroadcastHandler handler);
  // The same with a handler that cannot be copied (it owns a std::unique_ptr, a connection): it
  // is moved in once and called in place, from up to the spec's concurrency threads at once,
  // as a copyable one is. It lives until the fleet is destroyed.
  template <typename F, typename = std::enable_if_t<
                            !std::is_copy_constructible_v<std::decay_t<F>> &&
                            std::is_invocable_r_v<Disposition, std::decay_t<F>&, const Message&>>>
  [[nodiscard]] Result<Subscription> add_work(WorkSpec spec, F&& handler) {
    return add_work(std::move(spec), WorkHandler(kept_once(std::forward<F>(handler))));
  }
  template <typename F,
            typename = std::enable_if_t<!std::is_copy_constructible_v<std::decay_t<F>> &&
                                        std::is_invocable_v<std::decay_t<F>&, const Message&>>>
  [[nodiscard]] Result<Subscription> add_broadcast(BroadcastSpec spec, F&& handler) {
    return add_broadcast(std::move(spec), BroadcastHandler(kept_once(std::forward<F>(handler))));
  }

  // A work whose messages the application fetches (PullWork above); before or after start().
  // Errors as add_work's, and invalid_argument for per_key order (a key's messages are
  // handed to a handler one at a time).
  [[nodiscard]] Result<PullWork> add_pull_work(WorkSpec spec);

  // Stops one subscription as shutdown() stops them all while the connection stays up: no more
  // pulls, its handlers' Message::stop_token() is requested, running handlers finish until
  // `deadline` and are acked (flushed to the broker), what never started is given back. Returns
  // within about `deadline` (a broker request under way may add up to request_timeout); a
  // handler still running then is left to finish as ~Fleet leaves it. The name may be added
  // again afterwards. Serialised with shutdown(). Errors: invalid_argument (no such
  // subscription), shutting_down.
  [[nodiscard]] Result<void> remove(const std::string& name, std::chrono::milliseconds deadline);

  // Called at most once, from a fleet thread, when the fleet cannot go on by itself (connection
  // closed for good, stream deleted, consumer deleted with on_missing = exit, a bad request).
  // Never called before start() returns nor once shutdown() has begun.
  void on_fatal(FatalHandler handler);
  // The same with a handler that cannot be copied.
  template <typename F,
            typename = std::enable_if_t<!std::is_copy_constructible_v<std::decay_t<F>> &&
                                        std::is_invocable_v<std::decay_t<F>&, const FatalReport&>>>
  void on_fatal(F&& handler) {
    on_fatal(FatalHandler(kept_once(std::forward<F>(handler))));
  }

  // Never blocks on the broker: connecting and binding run in the background and are retried
  // with backoff for as long as it takes. Fails only on unusable options or specs (a TLS or
  // credentials file that cannot be read, no servers); after a failure it may be called again
  // (once the file is there, say). A second call after a success fails with invalid_argument.
  [[nodiscard]] Result<void> start();

  // Publishes a core NATS message; with a non-empty msg_id it carries a Nats-Msg-Id header so a
  // stream drops a duplicate (a handler that republishes on redelivery). `headers` go with it.
  [[nodiscard]] Result<void> publish(const std::string& subject, const std::string& data,
                                     const std::string& msg_id = {}, const Headers& headers = {});

  // Publishes into a stream and waits for the stream's ack (its sequence is returned). A
  // non-empty msg_id lets the stream drop a duplicate within its duplicate window, so a
  // redelivered message that republishes does not publish twice. `headers` go with it.
  // Thread-safe; returns within about `timeout`.
  //
  // Whether a stream holds the subject is asked of the broker ($JS.API.STREAM.NAMES) and cached
  // per subject: a positive answer is kept (asked again only after a publish to the subject found
  // no responders), a negative one is asked again at most every couple of seconds. It is never
  // inferred from "no responders" to the publish: while a stream elects a leader, or JetStream
  // starts up, a stream that holds the subject has no responder either. Errors:
  // - Errc::no_stream_for_subject: only when the broker answered that no stream holds the subject
  //   (a plain publish() is then the way to send it);
  // - anything else is retryable, the message naming the subject: Errc::timeout, no_responders,
  //   not_connected (the broker did not store it, or did not say whether a stream holds the
  //   subject), or the stream's refusal as a jetstream_category() code.
  [[nodiscard]] Result<uint64_t> publish_to_stream(const std::string& subject,
                                                   const std::string& data,
                                                   const std::string& msg_id,
                                                   std::chrono::milliseconds timeout,
                                                   const Headers& headers = {});

  // The newest message `stream` holds on `subject` (no wildcards), read from the stream's leader
  // ($JS.API.STREAM.MSG.GET, last_by_subj): its data and headers, and in delivery() the stream and
  // its stream sequence. std::nullopt when the stream holds none on the subject. With that
  // sequence in a Nats-Expected-Last-Subject-Sequence header (0: none), a publish_to_stream is
  // stored only if nothing was stored on the subject since; otherwise it fails with
  // jetstream_category() code kJsWrongLastSequence, and reading again tells what came between.
  // Thread-safe; errors as publish_to_stream's.
  [[nodiscard]] Result<std::optional<Message>> last_stored(const std::string& stream,
                                                           const std::string& subject,
                                                           std::chrono::milliseconds timeout);

  FleetHealth health() const;

  // Stops pulling, requests every handler's Message::stop_token(), lets in-flight handlers
  // finish and acks them, waits for deferred verdicts (Disposition::later), naks what was
  // buffered but not started (and what a downstream outage held, and what still awaits its
  // verdict at the deadline), then drains the connection (or closes it when it is reconnecting).
  // Returns within `deadline`, plus, with ordered work, a lease-bucket request under way (5 s at
  // most, when the broker stops answering); a handler still running then is left to finish (see
  // ~Fleet). Idempotent.
  void shutdown(std::chrono::milliseconds deadline);

  class Impl;

 private:
  // A copyable callable that calls `f`, moved once into shared ownership (std::function copies
  // what it holds).
  template <typename F>
  static auto kept_once(F&& f) {
    return [held = std::make_shared<std::decay_t<F>>(std::forward<F>(f))](const auto& arg) {
      return (*held)(arg);
    };
  }

  std::unique_ptr<Impl> impl_;
};

}  // namespace natsfleet
