// What a service consumes. WorkSpec: shared work, one replica per message. BroadcastSpec: every
// replica gets every message. A plain durable push consumer cannot be expressed: each work shape
// is shareable by construction.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace natsfleet {

enum class WorkShape {
  pull,  // a shared durable pull consumer (heartbeats, pipelined pulls)
  // A durable push consumer with a deliver group, bound by a queue subscription on every replica:
  // for fleets that share one consumer with replicas in other languages. Watched by polling.
  push_queue,
};

enum class StartAt {
  all,  // from the stream's first message (only when the consumer is first created)
  new_messages,
};

enum class OnMissing {
  recreate,  // recreate the consumer, starting after the last ack floor this replica saw
  exit,      // report fatal, so the orchestrator restarts the process
};

enum class StreamStorage { file, memory };

enum class StreamRetention {
  limits,    // kept until a limit (age, bytes, messages) drops them
  interest,  // kept until every consumer has acked them
  // Removed once acked; the broker admits one consumer per subject, so a work's migration to a
  // successor consumer waits until the old one is gone.
  work_queue,
};

// The stream a work needs, declared with it: created as written when no stream has that name;
// an existing one is never changed: where it differs, the work logs each difference once (a
// warning, event "stream-differs") and `natsfleet audit` reports it (finding stream-differs).
struct StreamSpec {
  std::string name{};
  std::vector<std::string> subjects{};  // empty: the work's subject(s)
  StreamStorage storage = StreamStorage::file;
  StreamRetention retention = StreamRetention::limits;
  int replicas = 1;                               // 1 to 5
  std::chrono::milliseconds max_age{0};           // 0: no age limit
  std::int64_t max_bytes = -1;                    // -1: no limit
  std::int64_t max_msgs = -1;                     // -1: no limit
  std::chrono::milliseconds duplicate_window{0};  // 0: the broker's (2 minutes)
};

// How fast a work goes: what is in flight and buffered on a replica, and how long the broker
// waits for a verdict before it hands a message to another replica.
struct WorkFlow {
  int concurrency = 1;  // handlers in flight on this replica
  int batch = 0;        // messages buffered per replica; 0: derived
  int max_ack_pending = 1000;
  // A message the broker has not heard about within ack_wait goes to another replica. natsfleet
  // keeps each message this replica holds alive with in-progress acks: one waiting for a
  // handler, and one whose handler runs long, once it has been held a third of ack_wait (and
  // again every third). Fast handlers never wait that long, so they cost nothing.
  std::chrono::milliseconds ack_wait = std::chrono::seconds(30);
  // How long that keep-alive lasts. A message still waiting for a handler (or for a pull work's
  // fetch) after this long is given back (nak'd, so another replica takes it at once); a handler
  // running longer is presumed hung: its message gets no more in-progress acks and the broker
  // redelivers it after ack_wait (a delivery of its own; natsfleet sets it aside after twice
  // max_deliver). 0: no keep-alive at all (waiting messages and long handlers expire after
  // ack_wait; a handler may still call Message::in_progress() itself).
  std::chrono::milliseconds keep_alive_limit = std::chrono::minutes(5);
  // The idle heartbeat asked of the broker on each pull; two missed ones start a lookup, so it
  // is at most a quarter of ack_wait (validate_work refuses more). 0: a quarter of ack_wait, at
  // most 5 s (heartbeat_of below).
  std::chrono::milliseconds heartbeat{0};
  std::chrono::milliseconds pull_expires = std::chrono::seconds(30);
};

// What a work does when handling fails: a message the handler rejects, a downstream that is
// down, a consumer that is gone.
struct WorkFailure {
  int max_deliver = 5;  // then the message is terminated
  // After a handler exception: redelivery waits growing from nak_backoff_min to nak_backoff_max.
  std::chrono::milliseconds nak_backoff_min = std::chrono::seconds(1);
  std::chrono::milliseconds nak_backoff_max = std::chrono::seconds(60);
  // While the downstream is down (Disposition::retry), held messages are tried again after
  // waits growing from retry_min to retry_max, with jitter.
  std::chrono::milliseconds retry_min = std::chrono::milliseconds(500);
  std::chrono::milliseconds retry_max = std::chrono::seconds(30);
  // A terminated message (the handler's term, or rejected max_deliver times) is first published
  // here, with its data, its headers and its origin (include/natsfleet/dead_letter.h); only once
  // the stream holding this subject stored it is the original terminated. Empty: a terminated
  // message is only logged. The stream must exist: a missing one fails the bind, by name.
  std::string dead_letter{};
  OnMissing missing_consumer = OnMissing::recreate;  // the work's consumer was deleted
};

// Per-key order: messages of one key (a subject token) are handled one after another, in stream
// order, on one replica at a time; different keys run in parallel. `subject` is what publishers
// use; key_token (1-based) names the `*` token that holds the key. The broker maps each subject
// to a partition (a subject mapping with partition(): docs/tutorial/library.md, "Ordered work",
// shows it); each partition is owned by one replica at a time, under a lease, and read in stream
// order; up to flow.concurrency keys are handled at once on this replica.
struct PerKeyOrder {
  int key_token = 0;
  int partitions = 16;
  // How long a partition's lease lasts unrenewed. An owner renews it several times a lease
  // (every tenth, at most every 0.5 s) and starts nothing once less than a fifth is left; a
  // replica that dies is replaced about a lease later (within a lease + 1 s). Shorter: faster
  // handover, more writes to the lease bucket.
  std::chrono::milliseconds lease = std::chrono::seconds(5);
};

// Shared work: what it reads (the fields at the top), how fast (flow), what to do on failure
// (failure), and optionally per-key order.
struct WorkSpec {
  std::string name{};     // the shared durable's name: every replica declaring it shares the work
  std::string subject{};  // the filter subject; also how the stream is found
  // Several filter subjects on the one consumer, in place of `subject` (which is then left
  // empty, or set to the first): nats-server 2.10 and later; on 2.9 the work reports fatal. They
  // must not overlap; the first finds the stream. Not with per_key.
  std::vector<std::string> subjects{};
  std::string stream{};  // optional: found by subject across all streams when empty
  // Optional: the stream this work reads, created when absent; `stream` is then left empty or
  // names the same stream. Not with per_key.
  std::optional<StreamSpec> declared_stream{};
  WorkShape shape = WorkShape::pull;
  StartAt start = StartAt::all;
  std::string description{};
  WorkFlow flow{};
  WorkFailure failure{};
  // Set: per-key order (PerKeyOrder above). Empty: messages are handled in parallel, in any
  // order, on any replica.
  std::optional<PerKeyOrder> per_key{};
};

// The heartbeat a work asks of the broker: its own, or when 0 a quarter of its ack_wait, at most
// 5 s and at least 50 ms.
inline std::chrono::milliseconds heartbeat_of(const WorkSpec& spec) {
  if (spec.flow.heartbeat.count() != 0) return spec.flow.heartbeat;
  const auto quarter = spec.flow.ack_wait / 4;
  const std::chrono::milliseconds most = std::chrono::seconds(5), least{50};
  return quarter > most ? most : quarter < least ? least : quarter;
}

enum class BroadcastSource {
  // A core NATS subscription: what is published while this replica is away is not seen.
  core,
  // A JetStream consumer of this replica's own (ephemeral, new messages): after an outage or a
  // broker restart it resumes after the last message this replica saw, so nothing stored in the
  // stream is missed. The subject must be held by a stream.
  jetstream,
};

struct BroadcastSpec {
  std::string name{};
  std::string subject{};  // wildcards allowed
  int concurrency = 1;
  BroadcastSource source = BroadcastSource::core;
  std::string stream{};  // jetstream only; found by subject when empty
  // jetstream only: the idle heartbeat asked of the broker on each pull.
  std::chrono::milliseconds heartbeat = std::chrono::seconds(5);
  // jetstream only: create `stream` (file storage, holding `subject`, messages kept for
  // stream_max_age, duplicates by message id dropped for 2 minutes) when it does not exist.
  // For a broadcast that owns its stream, such as a relay's.
  bool create_stream = false;
  std::chrono::milliseconds stream_max_age = std::chrono::minutes(10);
  // jetstream only: a replica's consumer starts with the last message of each subject the
  // stream holds, then new ones (instead of new ones only). A relay learns every member's last
  // status this way, even one published while its subscription was being set up.
  bool start_with_last_per_subject = false;
  // core only: messages waiting for a handler are bounded. When the queue is full the oldest
  // waiting message is dropped (counted, logged once an episode), or with key_token set (the
  // 1-based subject token naming a key, e.g. 2 for member.<id>.status) the older waiting
  // message of the same key when there is one: a status stream wants each key's newest.
  int max_queued = 1024;
  int key_token = 0;
};

}  // namespace natsfleet
