// Where the daemon hands each message: a file, stdout, a long-lived worker process, an HTTP
// endpoint, or (for a broadcast) the WebSocket sessions this replica holds. A Sink turns "the
// message was taken" into the Disposition the fleet sends the broker.
//
//   auto sink = natsfleet::sinks::make_sink({.type = "file", .path = "out/mail.jsonl"});
//   SinkResult r = sink->deliver(message, "mail-relay");  // publish r.publish, then settle
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "natsfleet/message.h"

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

// The sink section of the config, one field a line.
struct SinkOptions {
  std::string type;                            // file | stdout | worker | http | websocket
  std::string path;                            // file
  std::string fsync = "never";                 // file: never | batch
  std::vector<std::string> command;            // worker: argv, no shell
  std::chrono::milliseconds timeout{30000};    // worker: answer; http: whole exchange
  std::string url;                             // http: http://host[:port]/path or https://...
  std::map<std::string, std::string> headers;  // http: sent with every request
  std::string listen;                          // websocket: host:port
  int key_token = 1;                           // websocket: subject token naming the session key
  std::string web_root;                        // websocket: optional static files
  size_t max_sessions = 10000;                 // websocket
  size_t max_http_connections = 1024;          // websocket: connections not (yet) upgraded
  std::vector<std::string> allowed_origins;    // websocket: page origins that may attach
  std::string token_secret_file;               // websocket: member tokens' secret, read at start
  std::string member_header;                   // websocket: set by an authenticating proxy
};

// Throws std::invalid_argument naming the bad option (unknown type, missing path, empty command,
// a program that is not executable, an unusable url, fsync not never|batch, timeout <= 0).
std::unique_ptr<Sink> make_sink(const SinkOptions& options);

}  // namespace natsfleet::sinks
