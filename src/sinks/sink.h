// Where the daemon hands each message: a file, stdout, a long-lived worker process, an HTTP
// endpoint, or (for a broadcast) the WebSocket sessions this replica holds. A Sink turns "the
// message was taken" into the Disposition the fleet sends the broker.
//
//   auto sink = natsfleet::sinks::make_sink(FileSinkOptions{.path = "out/mail.jsonl"});
//   if (!sink) return sink.error();
//   SinkResult r = sink.value()->deliver(message, "mail-relay");  // publish r.publish, then settle
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "natsfleet/error.h"
#include "natsfleet/message.h"
#include "sinks/sink_options.h"

namespace natsfleet::sinks {

// A message to publish before the delivery is settled (worker answers may carry them). msg_id
// becomes the Nats-Msg-Id header so that a redelivered message does not publish twice.
struct Publish {
  std::string subject;
  std::string data;
  std::string msg_id;
};

// What a sink says about one message. Two kinds of failure:
// - retry: the downstream is unreachable, overloaded or out of space (http 408/429/5xx, a
//   timeout, a refused connection, a DNS failure, a file write error such as ENOSPC, a worker
//   that is not running, exited or timed out, a worker's "retry"). The message is held and
//   uses no delivery.
// - nak / term: the downstream refused this message (http's other 4xx, a worker's nak or term).
//   Each uses a delivery; after max_deliver the message is dead-lettered.
struct SinkResult {
  Disposition disposition = Disposition::ack();  // ack | retry(after) | nak(delay) | term
  std::vector<Publish> publish;                  // publish these first, then settle
  std::string error;                             // why, when not ack (for logs and metrics)
};

class Sink {
 public:
  virtual ~Sink() = default;
  // Called from several handler threads at once (the subscription's concurrency): thread-safe.
  // Blocks until the sink has taken the message (file: written to the OS; worker: it answered;
  // http: a response). Never throws: every failure is a nak or a term with `error` set.
  virtual SinkResult deliver(const Message& message, const std::string& subscription) = 0;
  // False while the sink cannot make progress by itself (e.g. a worker that is crash-looping).
  virtual bool healthy() const { return true; }
  // For logs and /status: "file out/mail.jsonl".
  virtual std::string describe() const = 0;
  // Shutdown has begun: a delivery that would wait for the downstream to come back (a worker
  // being restarted) gives up at once with retry; deliveries in progress go on. Idempotent.
  virtual void begin_stop() {}
  // Releases resources (closes files, stops the worker, cancels requests in flight). Afterwards
  // deliver() answers retry. Idempotent.
  virtual void stop() {}
};

// Builds the sink `config` holds, which starts what it needs (a worker process, a gateway's
// listener). Each error names the sink's type: Errc::invalid_argument when the options or the
// machine make the sink unusable (a program that is not executable, an unusable url, an address
// in use, an unreadable token secret), Errc::no_resources when the system refused a thread.
// The config parser has checked every field already (with file, line and key); what is left here
// can only be known by trying.
Result<std::unique_ptr<Sink>> make_sink(const SinkConfig& config);

}  // namespace natsfleet::sinks
