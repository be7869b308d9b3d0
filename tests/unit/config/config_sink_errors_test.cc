// Every way a config's sinks, connection, TLS, health endpoint and variables can be wrong, one
// case each (the form of a config: config_errors_test.cc).
#include <gtest/gtest.h>

#include "bad_config.h"

namespace natsfleet::config {
namespace {

const BadConfig kCases[] = {
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

class BadSinkConfigTest : public testing::TestWithParam<BadConfig> {};

TEST_P(BadSinkConfigTest, NamesFileLineAndKey) { expect_refused(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Config, BadSinkConfigTest, testing::ValuesIn(kCases), case_label);

}  // namespace
}  // namespace natsfleet::config
