// Every way a config can be wrong, one case each: the error must name the file, the line and the
// dotted key, so a user can go straight to the fix.
#include <gtest/gtest.h>

#include <string>

#include "config/daemon_config.h"

namespace natsfleet::config {
namespace {

struct BadConfig {
  std::string label;
  std::string text;
  int line;
  std::string key;
  std::string problem;  // a substring of the problem that says why
};

std::ostream& operator<<(std::ostream& out, const BadConfig& bad) { return out << bad.label; }

// Line 1 of every case is its first line.
const BadConfig kBadConfigs[] = {
    // TOML syntax: the parser's line, no key.
    {"SyntaxError", R"(name = "svc"
[[work]
)",
     2, "", ""},
    {"DuplicateTomlKey", R"(name = "svc"
name = "again"
)",
     2, "", ""},

    // Unknown keys.
    {"UnknownTopLevelKey", R"(name = "svc"
servres = ["nats://127.0.0.1:4222"]
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "servres", "unknown key"},
    {"FirstUnknownKeyByLine", R"(name = "svc"
zz = 1
aa = 1
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "zz", "unknown key"},
    {"UnknownHealthKey", R"(name = "svc"
[health]
listen = "127.0.0.1:9464"
port = 9464
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     4, "health.port", "unknown key"},
    {"UnknownWorkKey", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
ackwait = "30s"
sink = { type = "stdout" }
)",
     5, "work[0].ackwait", "unknown key"},
    {"UnknownKeyInSecondWork", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
[[work]]
name = "v"
subject = "a.c"
batch = 10
sink = { type = "stdout" }
)",
     9, "work[1].batch", "unknown key"},
    {"UnknownBroadcastKey", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "a.b"
queue = "q"
sink = { type = "stdout" }
)",
     5, "broadcast[0].queue", "unknown key"},
    {"UnknownSinkKey", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "file", path = "out.jsonl", fsinc = "batch" }
)",
     5, "work[0].sink.fsinc", "unknown key"},
    {"KeyOfAnotherSinkType", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout", path = "out.jsonl" }
)",
     5, "work[0].sink.path", "stdout sink"},
    {"UnknownTlsKey", R"(name = "svc"
tls = { ca = "ca.pem", crt = "cert.pem" }
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "tls.crt", "unknown key"},

    // Wrong types.
    {"NameIsAnInteger", R"(name = 5
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     1, "name", "expected a string, got an integer"},
    {"ConcurrencyIsAString", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
concurrency = "4"
sink = { type = "stdout" }
)",
     5, "work[0].concurrency", "expected an integer, got a string"},
    {"OrderingWithoutKeyToken", R"(name = "svc"
[[work]]
name = "w"
subject = "orders.*"
ordering = "per-key"
sink = { type = "stdout" }
)",
     5, "work[0].ordering", "per-key needs key_token"},
    {"KeyTokenNotAWildcard", R"(name = "svc"
[[work]]
name = "w"
subject = "orders.*"
ordering = "per-key"
key_token = 1
sink = { type = "stdout" }
)",
     6, "work[0].key_token", "must be a '*' token"},
    {"KeyTokenWithoutOrdering", R"(name = "svc"
[[work]]
name = "w"
subject = "orders.*"
key_token = 2
sink = { type = "stdout" }
)",
     5, "work[0].key_token", "per-key\" only"},
    {"PartitionsOutOfRange", R"(name = "svc"
[[work]]
name = "w"
subject = "orders.*"
ordering = "per-key"
key_token = 2
partitions = 0
sink = { type = "stdout" }
)",
     7, "work[0].partitions", "between 1 and 1024"},
    {"OrderingLeaseTooShort", R"(name = "svc"
[[work]]
name = "w"
subject = "orders.*"
ordering = "per-key"
key_token = 2
lease = "100ms"
sink = { type = "stdout" }
)",
     7, "work[0].lease", "between"},
    {"OrderingIsUnknown", R"(name = "svc"
[[work]]
name = "w"
subject = "orders.*"
ordering = "strict"
sink = { type = "stdout" }
)",
     5, "work[0].ordering", "per-key"},
    {"MaxDeliverIsAFloat", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
max_deliver = 5.0
sink = { type = "stdout" }
)",
     5, "work[0].max_deliver", "expected an integer, got a float"},
    {"ServersIsAString", R"(name = "svc"
servers = "nats://127.0.0.1:4222"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "servers", "expected an array of strings, got a string"},
    {"ServerIsAnInteger", R"(name = "svc"
servers = [
  "nats://127.0.0.1:4222",
  4222,
]
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     4, "servers[1]", "expected a string, got an integer"},
    {"HealthIsAString", R"(name = "svc"
health = "127.0.0.1:9464"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "health", "expected a table, got a string"},
    {"WorkIsATable", R"(name = "svc"
[work]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "work", "expected an array of tables ([[work]]), got a table"},
    {"WorkIsAnArrayOfStrings", R"(name = "svc"
work = ["w"]
)",
     2, "work[0]", "expected a table, got a string"},
    {"SinkIsAString", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = "stdout"
)",
     5, "work[0].sink", "expected a table, got a string"},
    {"TlsIsAString", R"(name = "svc"
tls = "ca.pem"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "tls", "expected a table"},
    {"LogFormatIsABoolean", R"(name = "svc"
log_format = true
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "log_format", "expected a string, got a boolean"},

    // Names.
    {"ServiceNameMissing", R"([[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     1, "name", "missing"},
    {"ServiceNameInvalid", R"(name = "my service"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     1, "name", "may not contain"},
    {"WorkNameMissing", R"(name = "svc"

[[work]]
subject = "a.b"
sink = { type = "stdout" }
)",
     3, "work[0].name", "missing"},
    {"WorkNameEmpty", R"(name = "svc"
[[work]]
name = ""
subject = "a.b"
sink = { type = "stdout" }
)",
     3, "work[0].name", "empty"},
    {"WorkNameHasADot", R"(name = "svc"
[[work]]
name = "mail.relay"
subject = "a.b"
sink = { type = "stdout" }
)",
     3, "work[0].name", "may not contain"},
    {"BroadcastNameMissing", R"(name = "svc"
[[broadcast]]
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "broadcast[0].name", "missing"},
    {"DuplicateWorkNames", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
[[work]]
name = "w"
subject = "a.c"
sink = { type = "stdout" }
)",
     7, "work[1].name", "already the name of work[0] (line 2)"},
    {"BroadcastNamedLikeWork", R"(name = "svc"
[[work]]
name = "status"
subject = "a.b"
sink = { type = "stdout" }
[[broadcast]]
name = "status"
subject = "member.*.status"
sink = { type = "stdout" }
)",
     7, "broadcast[0].name", "already the name of work[0]"},
    {"DuplicateBroadcastNames", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "a.b"
sink = { type = "stdout" }
[[broadcast]]
name = "b"
subject = "a.c"
sink = { type = "stdout" }
)",
     7, "broadcast[1].name", "already the name of broadcast[0]"},

    // Subjects and stream.
    {"SubjectMissing", R"(name = "svc"
[[work]]
name = "w"
sink = { type = "stdout" }
)",
     2, "work[0].subject", "missing"},
    {"SubjectHasASpace", R"(name = "svc"
[[work]]
name = "w"
subject = "mail outgoing"
sink = { type = "stdout" }
)",
     4, "work[0].subject", "whitespace"},
    {"SubjectHasAnEmptyToken", R"(name = "svc"
[[work]]
name = "w"
subject = "a..b"
sink = { type = "stdout" }
)",
     4, "work[0].subject", "empty token"},
    {"SubjectFullWildcardNotLast", R"(name = "svc"
[[work]]
name = "w"
subject = "a.>.b"
sink = { type = "stdout" }
)",
     4, "work[0].subject", "last token"},
    {"SubjectPartialWildcard", R"(name = "svc"
[[work]]
name = "w"
subject = "a*"
sink = { type = "stdout" }
)",
     4, "work[0].subject", "whole token"},
    {"BroadcastSubjectInvalid", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "member..status"
sink = { type = "stdout" }
)",
     4, "broadcast[0].subject", "empty token"},
    {"StreamInvalid", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
stream = "MAIL.X"
sink = { type = "stdout" }
)",
     5, "work[0].stream", "stream name"},

    // Durations.
    {"DurationWithoutUnit", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
ack_wait = "30"
sink = { type = "stdout" }
)",
     5, "work[0].ack_wait", "'30' is not a duration"},
    {"DurationWithASpace", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
ack_wait = "30 s"
sink = { type = "stdout" }
)",
     5, "work[0].ack_wait", "not a duration"},
    {"NegativeDuration", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
ack_wait = "-1s"
sink = { type = "stdout" }
)",
     5, "work[0].ack_wait", "not a duration"},
    {"DurationWithUnknownUnit", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
heartbeat = "1x"
sink = { type = "stdout" }
)",
     5, "work[0].heartbeat", "not a duration"},
    {"DurationAsInteger", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
ack_wait = 30
sink = { type = "stdout" }
)",
     5, "work[0].ack_wait", "duration string like \"30s\", got an integer"},
    {"ShutdownTimeoutAsInteger", R"(name = "svc"
shutdown_timeout = 10
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "shutdown_timeout", "like \"30s\""},
    {"AckWaitBelow100ms", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
ack_wait = "50ms"
sink = { type = "stdout" }
)",
     5, "work[0].ack_wait", "must be between 100ms and 24h, got '50ms'"},
    {"HeartbeatBelow50ms", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
heartbeat = "10ms"
sink = { type = "stdout" }
)",
     5, "work[0].heartbeat", "must be between 50ms and 1m, got '10ms'"},

    // Counts.
    {"ConcurrencyZero", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
concurrency = 0
sink = { type = "stdout" }
)",
     5, "work[0].concurrency", "must be between 1 and 1024, got 0"},
    {"BroadcastConcurrencyZero", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "a.b"
concurrency = 0
sink = { type = "stdout" }
)",
     5, "broadcast[0].concurrency", "must be between 1 and 1024, got 0"},
    {"MaxAckPendingBelowConcurrency", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
concurrency = 8
max_ack_pending = 4
sink = { type = "stdout" }
)",
     6, "work[0].max_ack_pending", "below concurrency"},
    {"ConcurrencyAboveDefaultAckPending", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
concurrency = 1001
sink = { type = "stdout" }
)",
     5, "work[0].concurrency", "below concurrency"},
    {"MaxAckPendingZero", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
max_ack_pending = 0
sink = { type = "stdout" }
)",
     5, "work[0].max_ack_pending", "must be between 1 and 1000000, got 0"},
    {"MaxDeliverZero", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
max_deliver = 0
sink = { type = "stdout" }
)",
     5, "work[0].max_deliver", "-1 or at least 1"},
    {"MaxDeliverBelowMinusOne", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
max_deliver = -2
sink = { type = "stdout" }
)",
     5, "work[0].max_deliver", "must be between -1 and 1000000, got -2"},
    {"MaxDeliverOutOfRange", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
max_deliver = 5000000000
sink = { type = "stdout" }
)",
     5, "work[0].max_deliver", "must be between -1 and 1000000, got 5000000000"},

    {"RetryMaxBelowRetryMin", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
retry_min = "10s"
retry_max = "1s"
sink = { type = "stdout" }
)",
     6, "work[0].retry_max", "retry_max is below retry_min"},
    {"DeadLetterEmpty", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
dead_letter = ""
sink = { type = "stdout" }
)",
     5, "work[0].dead_letter", "is empty"},
    {"DeadLetterWildcard", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
dead_letter = "dead.>"
sink = { type = "stdout" }
)",
     5, "work[0].dead_letter", "has a wildcard"},
    {"DeadLetterSpace", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
dead_letter = "dead letters"
sink = { type = "stdout" }
)",
     5, "work[0].dead_letter", "whitespace"},
    {"DeadLetterNotAString", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
dead_letter = 1
sink = { type = "stdout" }
)",
     5, "work[0].dead_letter", "expected a string"},
    {"DeadLetterFedBackToTheWork", R"(name = "svc"
[[work]]
name = "w"
subject = "jobs.>"
dead_letter = "jobs.dead"
sink = { type = "stdout" }
)",
     5, "work[0].dead_letter", "consumed again"},

    // Choices.
    {"StartInvalid", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
start = "first"
sink = { type = "stdout" }
)",
     5, "work[0].start", "all, new"},
    {"OnMissingInvalid", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
on_missing = "ignore"
sink = { type = "stdout" }
)",
     5, "work[0].on_missing", "recreate, exit"},
    {"ShapeInvalid", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
shape = "push"
sink = { type = "stdout" }
)",
     5, "work[0].shape", "pull, push-queue"},
    {"BroadcastSourceInvalid", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "a.b"
source = "kafka"
sink = { type = "stdout" }
)",
     5, "broadcast[0].source", "core, jetstream"},
    {"BroadcastStreamWithCoreSource", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "a.b"
stream = "STATUS"
sink = { type = "stdout" }
)",
     5, "broadcast[0].stream", "jetstream"},
    {"BroadcastHeartbeatTooShort", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "a.b"
source = "jetstream"
heartbeat = "10ms"
sink = { type = "stdout" }
)",
     6, "broadcast[0].heartbeat", "must be between 50ms and 1m"},
    {"WebSocketSinkOnWork", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "websocket", listen = "127.0.0.1:8090" }
)",
     5, "work[0].sink", "[[broadcast]]"},
    {"WebSocketSinkWithoutKeyToken", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "status.all"
sink = { type = "websocket", listen = "127.0.0.1:8090" }
)",
     5, "broadcast[0].sink", "no '*' token"},
    {"WebSocketSinkKeyTokenBeyondSubject", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "member.*.status"
sink = { type = "websocket", listen = "127.0.0.1:8090", key_token = 4 }
)",
     5, "broadcast[0].sink", "beyond the 3 tokens"},
    {"WebSocketSinkListenNotHostPort", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "member.*.status"
sink = { type = "websocket", listen = "8090" }
)",
     5, "broadcast[0].sink.listen", "not host:port"},
    {"WebSocketSinkListenWithUserinfo", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "member.*.status"
sink = { type = "websocket", listen = "user@127.0.0.1:8090" }
)",
     5, "broadcast[0].sink.listen", "not host:port"},
    {"LogFormatInvalid", R"(name = "svc"
log_format = "xml"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "log_format", "text, json"},

    // Sinks.
    {"SinkMissing", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
)",
     2, "work[0].sink", "missing"},
    {"BroadcastSinkMissing", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "a.b"
)",
     2, "broadcast[0].sink", "missing"},
    {"SinkTypeMissing", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { path = "out.jsonl" }
)",
     5, "work[0].sink.type", "missing"},
    {"SinkTypeUnknown", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "kafka" }
)",
     5, "work[0].sink.type", "unknown sink type 'kafka'"},
    {"WebSocketSinkOriginWithAPath", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "member.*.status"
sink = { type = "websocket", allowed_origins = ["https://app.example.com/"] }
)",
     5, "broadcast[0].sink.allowed_origins", "is not an origin"},
    {"WebSocketSinkUnreadableTokenSecret", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "member.*.status"
sink = { type = "websocket", token_secret_file = "/nonexistent/token.secret" }
)",
     5, "broadcast[0].sink.token_secret_file", "cannot read /nonexistent/token.secret"},
    {"WebSocketSinkBadMemberHeader", R"(name = "svc"
[[broadcast]]
name = "b"
subject = "member.*.status"
sink = { type = "websocket", member_header = "X Member" }
)",
     5, "broadcast[0].sink.member_header", "is not a valid header name"},
    {"FileSinkWithoutPath", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "file" }
)",
     5, "work[0].sink.path", "missing"},
    {"FileSinkTableWithoutPath", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"

[work.sink]
type = "file"
fsync = "batch"
)",
     6, "work[0].sink.path", "missing"},
    {"FileSinkEmptyPath", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "file", path = "" }
)",
     5, "work[0].sink.path", "empty"},
    {"FsyncInvalid", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "file", path = "out.jsonl", fsync = "always" }
)",
     5, "work[0].sink.fsync", "never, batch"},
    {"WorkerWithoutCommand", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "worker" }
)",
     5, "work[0].sink.command", "missing"},
    {"WorkerEmptyCommand", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "worker", command = [] }
)",
     5, "work[0].sink.command", "empty"},
    {"WorkerCommandIsAString", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "worker", command = "python3 worker.py" }
)",
     5, "work[0].sink.command", "expected an array of strings, got a string"},
    {"WorkerCommandHasAnInteger", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "worker", command = ["/usr/bin/worker", 1] }
)",
     5, "work[0].sink.command[1]", "expected a string, got an integer"},
    {"WorkerProgramEmpty", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "worker", command = ["", "worker.py"] }
)",
     5, "work[0].sink.command", "program"},
    {"WorkerTimeoutZero", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "worker", command = ["/usr/bin/worker"], timeout = "0s" }
)",
     5, "work[0].sink.timeout", "more than 0s"},
    {"HttpWithoutUrl", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "http" }
)",
     5, "work[0].sink.url", "missing"},
    {"HttpUrlNotHttp", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "http", url = "ftp://example.com/hook" }
)",
     5, "work[0].sink.url", "not an http:// or https:// URL"},
    {"HttpUrlWithoutHost", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "http", url = "http:///hook" }
)",
     5, "work[0].sink.url", "with a host"},
    {"HttpUrlWithoutScheme", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "http", url = "127.0.0.1:8080/hook" }
)",
     5, "work[0].sink.url", "not an http:// or https:// URL"},
    {"HttpHeaderValueNotAString", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "http", url = "https://example.com/hook", headers = { X-Retry = 1 } }
)",
     5, "work[0].sink.headers.X-Retry", "expected a string, got an integer"},
    {"HttpHeaderValueWithLineBreak", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "http", url = "https://example.com/hook", headers = { X = "a\r\nHost: evil" } }
)",
     5, "work[0].sink.headers.X", "line break"},
    {"HttpHeaderNameInvalid", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "http", url = "https://example.com/hook", headers = { "Bad Name" = "x" } }
)",
     5, "work[0].sink.headers.Bad Name", "header name"},

    // Connection.
    {"ServerNotNatsScheme", R"(name = "svc"
servers = ["http://127.0.0.1:4222"]
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "servers[0]", "not a nats:// or tls:// URL"},
    {"ServerWithoutHost", R"(name = "svc"
servers = ["nats://127.0.0.1:4222", "nats://"]
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "servers[1]", "with a host"},
    {"ServerWithBadPort", R"(name = "svc"
servers = ["tls://broker:42x"]
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "servers[0]", "not a nats:// or tls:// URL"},
    {"ServersEmpty", R"(name = "svc"
servers = []
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "servers", "omit it"},
    {"CredentialsEmpty", R"(name = "svc"
credentials = ""
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "credentials", "empty"},
    {"UserWithoutPasswordFile", R"(name = "svc"
user = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "user", "needs password_file"},
    {"PasswordFileWithoutUser", R"(name = "svc"
password_file = "pw"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "password_file", "needs user"},
    {"TwoWaysToAuthenticate", R"(name = "svc"
credentials = "svc.creds"
token_file = "token"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     3, "token_file", "and credentials both given"},
    {"TlsKeyWithoutCert", R"(name = "svc"
tls = { ca = "ca.pem", key = "key.pem" }
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "tls.cert", "missing"},
    {"TlsCertWithoutKey", R"(name = "svc"
[tls]
cert = "cert.pem"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "tls.key", "missing"},
    {"TlsEmpty", R"(name = "svc"
tls = {}
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "tls", "empty"},
    {"HealthListenWithoutPort", R"(name = "svc"
[health]
listen = "127.0.0.1"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     3, "health.listen", "not host:port"},
    {"HealthListenPortOutOfRange", R"(name = "svc"
[health]
listen = "127.0.0.1:99999"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     3, "health.listen", "not host:port"},
    {"HealthListenWithoutHost", R"(name = "svc"
[health]
listen = ":9464"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     3, "health.listen", "not host:port"},
    {"HealthListenIsAnInteger", R"(name = "svc"
[health]
listen = 9464
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     3, "health.listen", "expected a string, got an integer"},

    // Several filter subjects.
    {"SubjectAndSubjects", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
subjects = ["a.b", "a.c"]
sink = { type = "stdout" }
)",
     5, "work[0].subjects", "subject is set too"},
    {"BadSubjectInSubjects", R"(name = "svc"
[[work]]
name = "w"
subjects = ["a.b",
  "a..c"]
sink = { type = "stdout" }
)",
     5, "work[0].subjects[1]", "empty token"},
    {"OverlappingSubjects", R"(name = "svc"
[[work]]
name = "w"
subjects = ["orders.*", "orders.paid"]
sink = { type = "stdout" }
)",
     4, "work[0].subjects", "overlap"},
    {"EmptySubjects", R"(name = "svc"
[[work]]
name = "w"
subjects = []
sink = { type = "stdout" }
)",
     4, "work[0].subjects", "is empty"},
    {"OrderedWorkWithSeveralSubjects", R"(name = "svc"
[[work]]
name = "w"
subjects = ["orders.*", "refunds.*"]
ordering = "per-key"
key_token = 2
sink = { type = "stdout" }
)",
     5, "work[0].ordering", "one subject"},

    // Environment variables (NATSFLEET_TEST_UNSET is never set).
    {"UnsetVariableInAnArray", R"(name = "svc"
servers = ["nats://a:4222", "${NATSFLEET_TEST_UNSET}"]
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     2, "servers[1]", "environment variable NATSFLEET_TEST_UNSET is not set"},
    {"UnsetVariableInASinkTable", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "http", url = "http://${NATSFLEET_TEST_UNSET}/in" }
)",
     5, "work[0].sink.url", "NATSFLEET_TEST_UNSET is not set"},
    {"UnsetVariableInADuration", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
ack_wait = "${NATSFLEET_TEST_UNSET}"
sink = { type = "stdout" }
)",
     5, "work[0].ack_wait", "NATSFLEET_TEST_UNSET is not set"},
    {"UnclosedVariable", R"(name = "svc-${NAME"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
     1, "name", "without a closing"},

    // Nothing declared.
    {"NothingToConsume", R"(name = "svc"
servers = ["nats://127.0.0.1:4222"]
)",
     1, "work", "nothing to consume"},
    {"EmptyWorkArray", R"(name = "svc"
work = []
)",
     2, "work", "nothing to consume"},
};

class BadConfigTest : public testing::TestWithParam<BadConfig> {};

TEST_P(BadConfigTest, NamesFileLineAndKey) {
  const BadConfig& bad = GetParam();
  try {
    parse_config(bad.text, "conf/bad.toml");
    FAIL() << "parsed without an error";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.file(), "conf/bad.toml") << error.what();
    EXPECT_EQ(error.line(), bad.line) << error.what();
    EXPECT_EQ(error.key(), bad.key) << error.what();
    EXPECT_NE(error.problem().find(bad.problem), std::string::npos) << error.what();
    const std::string prefix = "conf/bad.toml:" + std::to_string(bad.line) + ": " +
                               (bad.key.empty() ? "" : bad.key + ": ");
    EXPECT_EQ(std::string(error.what()).rfind(prefix, 0), 0u) << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Config, BadConfigTest, testing::ValuesIn(kBadConfigs),
                         [](const testing::TestParamInfo<BadConfig>& param) {
                           return param.param.label;
                         });

}  // namespace
}  // namespace natsfleet::config
