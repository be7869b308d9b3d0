// A message as a handler sees it, and what the handler decides about it.
//
//   natsfleet::Disposition handle(const natsfleet::Message& m) {
//     if (!ready()) return natsfleet::Disposition::nak(std::chrono::seconds(5));
//     send(m.data());  // throws on a failure: nak'd with backoff
//     return natsfleet::Disposition::ack();
//   }
//
// Or the verdict comes later, from any thread (a batch, an event loop, a coroutine):
//
//   std::vector<natsfleet::Message> batch;  // guarded by a mutex in real code
//   natsfleet::Disposition keep(const natsfleet::Message& m) {
//     batch.push_back(m);  // once the batch is written: for (auto& k : batch) (void)k.ack();
//     return natsfleet::Disposition::later();
//   }
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

#include "natsfleet/error.h"
#include "natsfleet/export.h"

namespace natsfleet {

using Headers = std::map<std::string, std::vector<std::string>>;

// How a delivery's in_progress() and verdict reach the broker and its stop_token() learns of a
// stop: opaque, made by the fleet. A Message built elsewhere (a test of a handler, say) has none.
class DeliveryControl;
class Disposition;
class PullQueue;  // a pull work's waiting messages (fleet.h), which marks who holds one

// JetStream delivery facts, parsed from the `$JS.ACK...` reply subject.
struct Delivery {
  std::string stream{};
  std::string consumer{};
  uint64_t stream_seq = 0;
  uint64_t consumer_seq = 0;
  uint64_t delivered = 0;  // 1 on first delivery, more on redelivery
  uint64_t pending = 0;    // messages left for the consumer after this one
  int64_t timestamp_ns = 0;
};

// Ordered work's fencing token (WorkSpec::per_key): the partition the message was
// read from, and the epoch of the lease its owner held when it handed the message out. A
// downstream that applies a key's writes only in rising stream sequence (and may refuse an epoch
// below the newest it saw for the partition) ignores a late write from an owner that was paused
// past its lease: no client can prevent that write, only the receiver can refuse it.
struct FencingToken {
  int partition = 0;
  uint64_t epoch = 0;
};

// A value: copies share the delivery (its verdict is given once, through any copy). Its accessors
// may be called from any thread on any copy; in_progress(), stop_token() and the verdicts are
// safe from any thread at the same time, even after the handler returned or its Fleet is gone.
class NATSFLEET_API Message {
 public:
  Message() = default;
  Message(std::string subject, std::string data, Headers headers,
          std::optional<Delivery> delivery = std::nullopt, std::string reply = {},
          std::shared_ptr<DeliveryControl> control = nullptr,
          std::optional<FencingToken> fence = std::nullopt)
      : subject_(std::move(subject)),
        data_(std::move(data)),
        headers_(std::move(headers)),
        delivery_(std::move(delivery)),
        reply_(std::move(reply)),
        control_(std::move(control)),
        fence_(fence) {}

  const std::string& subject() const { return subject_; }
  const std::string& data() const { return data_; }
  const Headers& headers() const { return headers_; }
  // The first value of a header, or empty.
  std::string header(const std::string& key) const {
    auto it = headers_.find(key);
    return it == headers_.end() || it->second.empty() ? std::string() : it->second.front();
  }
  // Set for JetStream deliveries, empty for core NATS broadcasts.
  const std::optional<Delivery>& delivery() const { return delivery_; }
  uint64_t stream_seq() const { return delivery_ ? delivery_->stream_seq : 0; }
  uint64_t consumer_seq() const { return delivery_ ? delivery_->consumer_seq : 0; }
  uint64_t delivered() const { return delivery_ ? delivery_->delivered : 1; }
  // Where the broker takes this delivery's answer (JetStream's `$JS.ACK...` subject); empty for
  // a core NATS message without a reply subject.
  const std::string& reply() const { return reply_; }
  // Set for ordered work's deliveries only: with stream_seq(), the fencing token.
  const std::optional<FencingToken>& fence() const { return fence_; }

  // Tells the broker the handler is still working, restarting the ack_wait clock. Call it from
  // long handlers more often than ack_wait; any thread, even on a copy kept after the handler
  // returned or its Fleet is gone. Errors: shutting_down once the subscription that delivered it
  // has stopped; not_connected (or another connection error) when it could not be sent. Does
  // nothing (success) for core NATS messages and ordered work's, whose reader keeps them alive.
  Result<void> in_progress() const;

  // Stop is requested once the subscription that delivered this message begins to stop
  // (Fleet::shutdown, Fleet::remove, ~Fleet): a long handler that watches it can return its
  // verdict before the deadline. Any thread; never requested for a Message built elsewhere.
  std::stop_token stop_token() const;

  // The verdict of a work message whose handler returned Disposition::later() (or will: a
  // verdict given while the handler runs is kept until it returns and wins over its return
  // value). Any thread, once per delivery, on any copy; it goes out as the handler's return
  // would (max_deliver, dead letters, retry and the downstream gate included) and the result
  // says whether the answer could be sent. Errors: already_settled (a verdict was given or the
  // handler returned one); shutting_down (the subscription stopped and gave the message back);
  // timeout (kept past keep_alive_limit and ack_wait: the broker has redelivered it);
  // invalid_argument (not a work message: ordered work, broadcasts, a Message built elsewhere).
  Result<void> settle(Disposition verdict) const;
  Result<void> ack() const;
  Result<void> nak(std::chrono::milliseconds delay = {}) const;
  Result<void> term(std::string reason = {}) const;

 private:
  friend class PullQueue;
  std::string subject_;
  std::string data_;
  Headers headers_;
  std::optional<Delivery> delivery_;
  std::string reply_;
  std::shared_ptr<DeliveryControl> control_;
  std::optional<FencingToken> fence_;
};

// What a work handler decided. Two kinds of failure, and they are treated differently:
// - rejected (nak, term, or a throw): this message is the problem. Each one uses up a delivery;
//   after max_deliver the message is terminated and goes to the work's dead-letter subject.
// - retry: the message is fine, but what it is handed to (a database, an endpoint, a disk) is
//   unavailable. The fleet keeps the message (in-progress acks: no delivery is used), and when
//   retryable failures hit different messages with no success in between it calls the
//   downstream down: it stops pulling, retries the held messages one at a time with jittered
//   backoff and resumes at full speed on the first success. A message that fails while others
//   succeed is its own problem: it takes the rejected path.
class NATSFLEET_API Disposition {
 public:
  enum class Kind { ack, nak, term, retry, later };

  static Disposition ack() { return Disposition(Kind::ack, {}); }
  // Redeliver, after `delay` (zero: as soon as the broker likes).
  static Disposition nak(std::chrono::milliseconds delay = {}) { return {Kind::nak, delay}; }
  // Never redeliver: the message goes to the work's dead-letter subject (when set), then the
  // broker emits a terminated advisory.
  static Disposition term() { return Disposition(Kind::term, {}); }
  // The downstream is unavailable; try this message again later, using no delivery. `after`
  // (a Retry-After, say) is the earliest next try; zero leaves it to the fleet's backoff.
  static Disposition retry(std::chrono::milliseconds after = {}) { return {Kind::retry, after}; }
  // The handler kept the Message and settles it later (Message::settle, ack, nak, term) from any
  // thread. Meanwhile it is kept alive by in-progress acks (up to keep_alive_limit) and counts
  // against max_ack_pending, not against the handler threads or the pull window; one never
  // settled is given back when its subscription stops. Work only: ordered work takes it as a
  // rejection.
  static Disposition later() { return Disposition(Kind::later, {}); }

  // Why (for a nak, a term or a retry): logged, shown in /status, and carried by a dead letter.
  //   return Disposition::term().because("HTTP 400: unknown recipient");
  Disposition because(std::string reason) && {
    reason_ = std::move(reason);
    return std::move(*this);
  }

  Kind kind() const { return kind_; }
  std::chrono::milliseconds delay() const { return delay_; }
  const std::string& reason() const { return reason_; }

 private:
  Disposition(Kind kind, std::chrono::milliseconds delay) : kind_(kind), delay_(delay) {}
  Kind kind_;
  std::chrono::milliseconds delay_;
  std::string reason_;
};

// A broadcast handler (which returns nothing) throws this to say "the downstream is unavailable,
// this message is fine": the fleet retries it like Disposition::retry instead of counting an
// error. A core NATS broadcast cannot be redelivered: it is retried in place while its bounded
// queue keeps the newest messages.
class NATSFLEET_API DownstreamUnavailable : public std::runtime_error {
 public:
  explicit DownstreamUnavailable(const std::string& why, std::chrono::milliseconds after = {})
      : std::runtime_error(why), after_(after) {}
  std::chrono::milliseconds after() const { return after_; }

 private:
  std::chrono::milliseconds after_;
};

}  // namespace natsfleet
