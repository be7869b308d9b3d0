// Every way a config's form can be wrong, one case each: TOML syntax, unknown keys, wrong types,
// names, subjects, durations, counts and choices (sinks, connection and the rest:
// config_sink_errors_test.cc).
#include <gtest/gtest.h>

#include "bad_config.h"

namespace natsfleet::config {
namespace {

const BadConfig kCases[] = {
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
    {"AckWaitBelow200ms", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
ack_wait = "50ms"
sink = { type = "stdout" }
)",
     5, "work[0].ack_wait", "must be between 200ms and 24h, got '50ms'"},
    // A declared stream: each key of the table named as work[0].stream.<key>.
    {"DeclaredStreamUnknownKey", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
[work.stream]
name = "A"
max_ages = "1h"
)",
     8, "work[0].stream.max_ages", "unknown key"},
    {"DeclaredStreamWithoutName", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
[work.stream]
max_age = "1h"
)",
     6, "work[0].stream.name", "missing (the stream's name)"},
    {"DeclaredStreamRetention", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
[work.stream]
name = "A"
retention = "workqueue"
)",
     8, "work[0].stream.retention", "work-queue"},
    {"DeclaredStreamSubjectsMissTheWorks", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
[work.stream]
name = "A"
subjects = ["a.c", "b.>"]
)",
     8, "work[0].stream.subjects", "do not hold the work's subject 'a.b'"},
    {"DeclaredStreamMaxBytesZero", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
[work.stream]
name = "A"
max_bytes = 0
)",
     8, "work[0].stream.max_bytes", "-1 (no limit) or positive"},
    {"DeclaredStreamDuplicateWindowBeyondMaxAge", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
[work.stream]
name = "A"
max_age = "1m"
duplicate_window = "2m"
)",
     9, "work[0].stream.duplicate_window", "longer than its max_age"},
    {"DeclaredStreamWithPerKeyOrder", R"(name = "svc"
[[work]]
name = "w"
subject = "a.*"
ordering = "per-key"
key_token = 2
stream = { name = "A" }
sink = { type = "stdout" }
)",
     7, "work[0].stream", "not available with ordering = per-key"},
    {"HeartbeatAboveAQuarterOfAckWait", R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
heartbeat = "2s"
ack_wait = "1s"
sink = { type = "stdout" }
)",
     5, "work[0].heartbeat", "heartbeat 2s is more than a quarter of ack_wait 1s"},
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
};

class BadConfigTest : public testing::TestWithParam<BadConfig> {};

TEST_P(BadConfigTest, NamesFileLineAndKey) { expect_refused(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Config, BadConfigTest, testing::ValuesIn(kCases), case_label);

}  // namespace
}  // namespace natsfleet::config
