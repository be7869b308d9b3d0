// Configs that are right: every value lands in the typed config, defaults fill the rest, and file
// paths are found next to the config file.
#include "config/daemon_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace natsfleet::config {
namespace {

using sinks::HttpSinkOptions;
using sinks::SinkConfig;
using sinks::WebSocketSinkOptions;
using sinks::WorkerSinkOptions;
using std::chrono::milliseconds;

// The contract's example, verbatim.
constexpr const char* kContractExample =
    R"(name = "mailer"                          # service name: client name, logs, metrics label
servers = ["nats://127.0.0.1:4222"]      # omitted: embedded broker
credentials = "svc.creds"                # optional
tls = { ca = "ca.pem", cert = "cert.pem", key = "key.pem" }   # optional; all files
log_format = "text"                      # text | json   (optional, default text)
shutdown_timeout = "10s"                 # optional: how long SIGTERM waits for handlers
[health]
listen = "127.0.0.1:9464"                # /healthz /readyz /metrics /status ; default 127.0.0.1:9464
[[work]]
name = "mail-relay"                      # the shared consumer's name
subject = "mail.outgoing"
stream = ""                              # optional; found by subject when empty
shape = "pull"                           # pull | push-queue   (push-queue: accept and record it; the runtime may reject it later)
ack_wait = "30s"
max_deliver = 5
max_ack_pending = 1000
start = "all"                            # all | new
on_missing = "recreate"                  # recreate | exit
heartbeat = "5s"
concurrency = 1
sink = { type = "file", path = "out/mail.jsonl" }
[[broadcast]]
name = "status"
subject = "member.*.status"
concurrency = 1                           # optional
sink = { type = "stdout" }
)";

std::string source_dir() { return NATSFLEET_SOURCE_DIR; }

std::string file_path(const WorkConfig& work) {
  return std::get<sinks::FileSinkOptions>(work.sink).path;
}

TEST(DaemonConfig, ContractExampleParsesIntoExactValues) {
  const DaemonConfig config = parse_config(kContractExample, "/etc/natsfleet/mailer.toml").value();
  EXPECT_EQ(config.file, "/etc/natsfleet/mailer.toml");
  EXPECT_EQ(config.fleet.name, "mailer");
  EXPECT_EQ(config.fleet.servers, std::vector<std::string>{"nats://127.0.0.1:4222"});
  EXPECT_EQ(config.fleet.credentials_file, "/etc/natsfleet/svc.creds");
  EXPECT_EQ(config.fleet.tls.ca, "/etc/natsfleet/ca.pem");
  EXPECT_EQ(config.fleet.tls.cert, "/etc/natsfleet/cert.pem");
  EXPECT_EQ(config.fleet.tls.key, "/etc/natsfleet/key.pem");
  EXPECT_EQ(config.log_format, "text");
  EXPECT_EQ(config.shutdown_timeout, milliseconds(10000));
  EXPECT_EQ(config.health_listen, "127.0.0.1:9464");

  ASSERT_EQ(config.work.size(), 1u);
  const WorkConfig& work = config.work[0];
  EXPECT_EQ(work.line, 9);
  EXPECT_EQ(work.shape, "pull");
  EXPECT_EQ(work.spec.name, "mail-relay");
  EXPECT_EQ(work.spec.subject, "mail.outgoing");
  EXPECT_EQ(work.spec.stream, "");
  EXPECT_EQ(work.spec.shape, WorkShape::pull);
  EXPECT_EQ(work.spec.flow.ack_wait, milliseconds(30000));
  EXPECT_EQ(work.spec.failure.max_deliver, 5);
  EXPECT_EQ(work.spec.flow.max_ack_pending, 1000);
  EXPECT_EQ(work.spec.start, StartAt::all);
  EXPECT_EQ(work.spec.failure.missing_consumer, OnMissing::recreate);
  EXPECT_EQ(work.spec.flow.heartbeat, milliseconds(5000));
  EXPECT_EQ(work.spec.flow.concurrency, 1);
  EXPECT_EQ(work.sink, SinkConfig(sinks::FileSinkOptions{.path = "/etc/natsfleet/out/mail.jsonl",
                                                         .fsync = sinks::FsyncPolicy::never}));
  EXPECT_EQ(work.sink_line, 21);

  ASSERT_EQ(config.broadcast.size(), 1u);
  const BroadcastConfig& broadcast = config.broadcast[0];
  EXPECT_EQ(broadcast.line, 22);
  EXPECT_EQ(broadcast.spec.name, "status");
  EXPECT_EQ(broadcast.spec.subject, "member.*.status");
  EXPECT_EQ(broadcast.spec.concurrency, 1);
  EXPECT_EQ(broadcast.sink, SinkConfig(sinks::StdoutSinkOptions{}));
  EXPECT_EQ(broadcast.sink_line, 26);
}

TEST(DaemonConfig, WebSocketSinkKeysSessionsByTheSubjectsWildcardToken) {
  auto config = parse_config(R"(name = "relay"
[[broadcast]]
name = "status"
subject = "member.*.status"
sink = { type = "websocket", listen = "127.0.0.1:8090", web_root = "web", max_sessions = 50 }
)",
                             "/etc/natsfleet/relay.toml")
                    .value();
  const auto& sink = std::get<WebSocketSinkOptions>(config.broadcast.at(0).sink);
  EXPECT_EQ(sink.host, "127.0.0.1");
  EXPECT_EQ(sink.port, 8090);
  EXPECT_EQ(sink.key_token, 2);
  EXPECT_EQ(sink.web_root, "/etc/natsfleet/web");
  EXPECT_EQ(sink.max_sessions, 50u);
}

TEST(DaemonConfig, WebSocketSinkDefaultsToLoopbackAndSessionsTheDescriptorsAllow) {
  auto config = parse_config(R"(name = "relay"
[[broadcast]]
name = "status"
subject = "member.*.status"
sink = { type = "websocket" }
)",
                             "relay.toml")
                    .value();
  const auto& sink = std::get<WebSocketSinkOptions>(config.broadcast.at(0).sink);
  EXPECT_EQ(sinks::listen_address(sink), "127.0.0.1:8090");
  EXPECT_EQ(sink.max_sessions, 0u) << "0: computed from the file-descriptor limit";
  EXPECT_TRUE(sink.allowed_origins.empty());
  EXPECT_EQ(sink.token_secret_file, "");
  EXPECT_EQ(sink.member_header, "");
}

TEST(DaemonConfig, WebSocketSinkReadsOriginsAndAuthentication) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("natsfleet-config-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "token.secret") << std::string(64, 'a') << "\n";
  auto config = parse_config(R"(name = "relay"
[[broadcast]]
name = "status"
subject = "member.*.status"
[broadcast.sink]
type = "websocket"
allowed_origins = ["https://app.example.com", "http://localhost:3000"]
token_secret_file = "token.secret"
member_header = "X-Auth-Member"
)",
                             (dir / "relay.toml").string())
                    .value();
  const auto& sink = std::get<WebSocketSinkOptions>(config.broadcast.at(0).sink);
  EXPECT_EQ(sink.allowed_origins,
            (std::vector<std::string>{"https://app.example.com", "http://localhost:3000"}));
  EXPECT_EQ(sink.token_secret_file, (dir / "token.secret").string());
  EXPECT_EQ(sink.member_header, "X-Auth-Member");

  std::ofstream(dir / "token.secret") << "short\n";
  try {
    (void)parse_config(R"(name = "relay"
[[broadcast]]
name = "status"
subject = "member.*.status"
sink = { type = "websocket", token_secret_file = "token.secret" }
)",
                       (dir / "relay.toml").string())
        .value();
    ADD_FAILURE() << "a 5-byte secret was accepted";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key(), "broadcast[0].sink.token_secret_file");
    EXPECT_NE(error.problem().find("holds 5 bytes"), std::string::npos) << error.what();
    EXPECT_EQ(error.problem().find("short"), std::string::npos) << "the secret is never shown";
  }
  std::filesystem::remove_all(dir);
}

TEST(DaemonConfig, AWorksStreamIsANameOrADeclaration) {
  auto named = parse_config(R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
stream = "A"
sink = { type = "stdout" }
)",
                            "svc.toml")
                   .value();
  EXPECT_EQ(named.work.at(0).spec.stream, "A");
  EXPECT_FALSE(named.work.at(0).spec.declared_stream);

  auto declared = parse_config(R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
[work.stream]
name = "A"
subjects = ["a.>"]
storage = "memory"
retention = "work-queue"
replicas = 3
max_age = "168h"
max_bytes = 1073741824
max_msgs = 1000000
duplicate_window = "5m"
)",
                               "svc.toml")
                      .value();
  const WorkSpec& spec = declared.work.at(0).spec;
  EXPECT_EQ(spec.stream, "A");
  ASSERT_TRUE(spec.declared_stream);
  const StreamSpec& stream = *spec.declared_stream;
  EXPECT_EQ(stream.name, "A");
  EXPECT_EQ(stream.subjects, std::vector<std::string>{"a.>"});
  EXPECT_EQ(stream.storage, StreamStorage::memory);
  EXPECT_EQ(stream.retention, StreamRetention::work_queue);
  EXPECT_EQ(stream.replicas, 3);
  EXPECT_EQ(stream.max_age, std::chrono::hours(168));
  EXPECT_EQ(stream.max_bytes, 1073741824);
  EXPECT_EQ(stream.max_msgs, 1000000);
  EXPECT_EQ(stream.duplicate_window, std::chrono::minutes(5));
}

TEST(DaemonConfig, JetStreamBroadcastReadsItsSourceStreamAndHeartbeat) {
  auto config = parse_config(R"(name = "relay"
[[broadcast]]
name = "status"
subject = "member.*.status"
source = "jetstream"
stream = "STATUS"
heartbeat = "2s"
sink = { type = "stdout" }
)",
                             "relay.toml")
                    .value();
  const BroadcastSpec& spec = config.broadcast.at(0).spec;
  EXPECT_EQ(spec.source, BroadcastSource::jetstream);
  EXPECT_EQ(spec.stream, "STATUS");
  EXPECT_EQ(spec.heartbeat, std::chrono::milliseconds(2000));
}

TEST(DaemonConfig, SubjectsGiveOneConsumerSeveralFilterSubjects) {
  auto config = parse_config(R"(name = "billing"
[[work]]
name = "orders"
subjects = ["orders.created", "orders.paid"]
sink = { type = "stdout" }
)",
                             "billing.toml")
                    .value();
  const WorkSpec& spec = config.work.at(0).spec;
  EXPECT_EQ(spec.subjects, (std::vector<std::string>{"orders.created", "orders.paid"}));
  EXPECT_EQ(spec.subject, "orders.created");  // the one that finds the stream
}

TEST(DaemonConfig, OmittedKeysTakeTheDefaults) {
  const DaemonConfig config = parse_config(R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
[[broadcast]]
name = "b"
subject = "c.>"
sink = { type = "stdout" }
)",
                                           "svc.toml")
                                  .value();
  const WorkSpec defaults;
  EXPECT_TRUE(config.fleet.servers.empty());
  EXPECT_EQ(config.fleet.credentials_file, "");
  EXPECT_EQ(config.fleet.tls.ca, "");
  EXPECT_EQ(config.fleet.connect_timeout, FleetOptions{}.connect_timeout);
  EXPECT_EQ(config.health_listen, "127.0.0.1:9464");
  EXPECT_EQ(config.log_format, "text");
  EXPECT_EQ(config.shutdown_timeout, milliseconds(10000));
  const WorkConfig& work = config.work.at(0);
  EXPECT_EQ(work.shape, "pull");
  EXPECT_EQ(work.spec.stream, defaults.stream);
  EXPECT_EQ(work.spec.flow.ack_wait, defaults.flow.ack_wait);
  EXPECT_EQ(work.spec.failure.max_deliver, defaults.failure.max_deliver);
  EXPECT_EQ(work.spec.flow.max_ack_pending, defaults.flow.max_ack_pending);
  EXPECT_EQ(work.spec.start, defaults.start);
  EXPECT_EQ(work.spec.failure.missing_consumer, defaults.failure.missing_consumer);
  EXPECT_EQ(work.spec.flow.heartbeat, defaults.flow.heartbeat);
  EXPECT_EQ(work.spec.flow.concurrency, defaults.flow.concurrency);
  EXPECT_EQ(work.spec.flow.batch, defaults.flow.batch);
  EXPECT_EQ(work.spec.flow.pull_expires, defaults.flow.pull_expires);
  EXPECT_EQ(work.spec.failure.dead_letter, "");
  EXPECT_EQ(config.broadcast.at(0).spec.concurrency, BroadcastSpec{}.concurrency);
}

TEST(DaemonConfig, EveryValueOtherThanTheDefaultIsRead) {
  const DaemonConfig config = parse_config(R"(name = "svc"
servers = ["tls://user:secret@broker-1:4443", "nats://[::1]:4222"]
log_format = "json"
shutdown_timeout = "1m30s"
[health]
listen = "[::1]:0"
[[work]]
name = "w"
subject = "jobs.>"
stream = "JOBS"
shape = "push-queue"
ack_wait = "2m"
max_deliver = -1
max_ack_pending = 64
start = "new"
on_missing = "exit"
heartbeat = "250ms"
concurrency = 8
dead_letter = "dead.jobs"
retry_min = "1s"
retry_max = "2m"
sink = { type = "file", path = "/var/lib/svc/jobs.jsonl", fsync = "batch" }
)",
                                           "svc.toml")
                                  .value();
  EXPECT_EQ(config.fleet.servers,
            (std::vector<std::string>{"tls://user:secret@broker-1:4443", "nats://[::1]:4222"}));
  EXPECT_EQ(config.log_format, "json");
  EXPECT_EQ(config.shutdown_timeout, milliseconds(90000));
  EXPECT_EQ(config.health_listen, "[::1]:0");
  const WorkConfig& work = config.work.at(0);
  EXPECT_EQ(work.shape, "push-queue");
  EXPECT_EQ(work.spec.shape, WorkShape::push_queue);
  EXPECT_EQ(work.spec.stream, "JOBS");
  EXPECT_EQ(work.spec.flow.ack_wait, milliseconds(120000));
  EXPECT_EQ(work.spec.failure.max_deliver, -1);
  EXPECT_EQ(work.spec.flow.max_ack_pending, 64);
  EXPECT_EQ(work.spec.start, StartAt::new_messages);
  EXPECT_EQ(work.spec.failure.missing_consumer, OnMissing::exit);
  EXPECT_EQ(work.spec.flow.heartbeat, milliseconds(250));
  EXPECT_EQ(work.spec.flow.concurrency, 8);
  EXPECT_EQ(work.spec.failure.dead_letter, "dead.jobs");
  EXPECT_EQ(work.spec.failure.retry_min, milliseconds(1000));
  EXPECT_EQ(work.spec.failure.retry_max, milliseconds(120000));
  EXPECT_EQ(work.sink, SinkConfig(sinks::FileSinkOptions{.path = "/var/lib/svc/jobs.jsonl",
                                                         .fsync = sinks::FsyncPolicy::batch}));
}

TEST(DaemonConfig, WorkerAndHttpSinksReadWithTheirDefaultTimeouts) {
  const DaemonConfig config = parse_config(R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "worker", command = ["/usr/bin/python3", "worker.py"] }
[[work]]
name = "v"
subject = "a.c"
sink = { type = "worker", command = ["/usr/bin/worker"], timeout = "5s" }
[[work]]
name = "h"
subject = "a.d"
sink = { type = "http", url = "http://127.0.0.1:8080/hook" }
[[broadcast]]
name = "g"
subject = "a.e"
[broadcast.sink]
type = "http"
url = "https://hooks.example.com/x"
timeout = "2s"
headers = { "Authorization" = "Bearer x", X-Source = "natsfleet" }
)",
                                           "svc.toml")
                                  .value();
  const auto& worker = std::get<WorkerSinkOptions>(config.work.at(0).sink);
  EXPECT_EQ(worker.command, (std::vector<std::string>{"/usr/bin/python3", "worker.py"}));
  EXPECT_EQ(worker.timeout, milliseconds(30000));
  EXPECT_EQ(std::get<WorkerSinkOptions>(config.work.at(1).sink).timeout, milliseconds(5000));
  const auto& http = std::get<HttpSinkOptions>(config.work.at(2).sink);
  EXPECT_EQ(http.url, "http://127.0.0.1:8080/hook");
  EXPECT_EQ(http.timeout, milliseconds(10000));
  EXPECT_TRUE(http.headers.empty());
  const auto& hook = std::get<HttpSinkOptions>(config.broadcast.at(0).sink);
  EXPECT_EQ(config.broadcast.at(0).sink_line, 17);
  EXPECT_EQ(hook.url, "https://hooks.example.com/x");
  EXPECT_EQ(hook.timeout, milliseconds(2000));
  EXPECT_EQ(hook.headers, (std::map<std::string, std::string>{{"Authorization", "Bearer x"},
                                                              {"X-Source", "natsfleet"}}));
}

// One file for every environment: ${VAR} and ${VAR:-default} in any string value.
TEST(DaemonConfig, EnvironmentVariablesFillStringValues) {
  ASSERT_EQ(setenv("NATSFLEET_TEST_URL", "nats://broker.prod:4222", 1), 0);
  ASSERT_EQ(setenv("NATSFLEET_TEST_TOKEN", "s3cret", 1), 0);
  ASSERT_EQ(setenv("NATSFLEET_TEST_EMPTY", "", 1), 0);
  const DaemonConfig config = parse_config(R"(name = "svc-${NATSFLEET_TEST_UNSET:-a}"
servers = ["${NATSFLEET_TEST_URL}"]
[[work]]
name = "w"
subject = "a.b"
ack_wait = "${NATSFLEET_TEST_EMPTY:-45s}"
sink = { type = "http", url = "http://127.0.0.1/in", headers = { Authorization = "Bearer ${NATSFLEET_TEST_TOKEN}", X-Note = "$${kept} $5" } }
)",
                                           "svc.toml")
                                  .value();
  unsetenv("NATSFLEET_TEST_URL");
  unsetenv("NATSFLEET_TEST_TOKEN");
  unsetenv("NATSFLEET_TEST_EMPTY");
  EXPECT_EQ(config.fleet.name, "svc-a");
  EXPECT_EQ(config.fleet.servers, (std::vector<std::string>{"nats://broker.prod:4222"}));
  EXPECT_EQ(config.work.at(0).spec.flow.ack_wait, milliseconds(45000));
  const auto& http = std::get<HttpSinkOptions>(config.work.at(0).sink);
  EXPECT_EQ(http.headers.at("Authorization"), "Bearer s3cret");
  EXPECT_EQ(http.headers.at("X-Note"), "${kept} $5");
}

// Each sink type's defaults live in its options struct only: a sink table with no more than its
// required keys reads as that struct default-constructed, and those are the documented defaults
// (docs/reference/config.md).
TEST(DaemonConfig, ASinkTableWithOnlyItsRequiredKeysGetsTheDocumentedDefaults) {
  const DaemonConfig config = parse_config(R"(name = "svc"
[[work]]
name = "f"
subject = "a.f"
sink = { type = "file", path = "/out/f.jsonl" }
[[work]]
name = "s"
subject = "a.s"
sink = { type = "stdout" }
[[work]]
name = "w"
subject = "a.w"
sink = { type = "worker", command = ["/usr/bin/worker"] }
[[work]]
name = "h"
subject = "a.h"
sink = { type = "http", url = "https://hooks.example.com/x" }
[[broadcast]]
name = "g"
subject = "member.*.status"
sink = { type = "websocket" }
)",
                                           "/etc/svc.toml")
                                  .value();
  const auto& file = std::get<sinks::FileSinkOptions>(config.work.at(0).sink);
  EXPECT_EQ(file, (sinks::FileSinkOptions{.path = "/out/f.jsonl"}));
  EXPECT_EQ(file.fsync, sinks::FsyncPolicy::never);

  EXPECT_EQ(config.work.at(1).sink, SinkConfig(sinks::StdoutSinkOptions{}));

  const auto& worker = std::get<WorkerSinkOptions>(config.work.at(2).sink);
  EXPECT_EQ(worker, (WorkerSinkOptions{.command = {"/usr/bin/worker"}}));
  EXPECT_EQ(worker.timeout, milliseconds(30000));

  const auto& http = std::get<HttpSinkOptions>(config.work.at(3).sink);
  EXPECT_EQ(http, (HttpSinkOptions{.url = "https://hooks.example.com/x"}));
  EXPECT_EQ(http.timeout, milliseconds(10000));
  EXPECT_TRUE(http.headers.empty());

  // key_token is the one value the config derives: the subject's first '*'.
  const auto& websocket = std::get<WebSocketSinkOptions>(config.broadcast.at(0).sink);
  EXPECT_EQ(websocket, (WebSocketSinkOptions{.key_token = 2}));
  EXPECT_EQ(sinks::listen_address(websocket), "127.0.0.1:8090");
  EXPECT_EQ(websocket.max_sessions, 0u) << "0: the daemon sizes it from the descriptor limit";
  EXPECT_EQ(websocket.web_root, "");
  EXPECT_TRUE(websocket.allowed_origins.empty());
  EXPECT_EQ(websocket.token_secret_file, "");
  EXPECT_EQ(websocket.member_header, "");
}

TEST(DaemonConfig, AnUnknownSinkTypeIsNamedWithEveryKnownOne) {
  try {
    (void)parse_config(R"(name = "svc"
[[broadcast]]
name = "g"
subject = "a.b"
sink = { type = "kafka" }
)",
                       "svc.toml")
        .value();
    FAIL() << "a kafka sink was accepted";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.line(), 5);
    EXPECT_EQ(error.key(), "broadcast[0].sink.type");
    EXPECT_EQ(error.problem(),
              "unknown sink type 'kafka' (known: file, stdout, worker, http, websocket)");
  }
}

TEST(DaemonConfig, AWebSocketListenAddressIsReadIntoHostAndPort) {
  auto listen = [](const std::string& address) {
    const DaemonConfig config = parse_config(R"(name = "relay"
[[broadcast]]
name = "status"
subject = "member.*.status"
sink = { type = "websocket", listen = ")" + address +
                                                 R"(" }
)",
                                             "relay.toml")
                                    .value();
    const auto& sink = std::get<WebSocketSinkOptions>(config.broadcast.at(0).sink);
    return sink.host + " " + std::to_string(sink.port);
  };
  EXPECT_EQ(listen("0.0.0.0:8091"), "0.0.0.0 8091");
  EXPECT_EQ(listen("[::1]:0"), "::1 0");
  EXPECT_EQ(listen("localhost:9000"), "localhost 9000");
}

TEST(DaemonConfig, RelativeFileSinkPathIsResolvedAgainstTheConfigDirectory) {
  constexpr const char* kText = R"(name = "svc"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "file", path = "out/w.jsonl" }
[[work]]
name = "v"
subject = "a.c"
sink = { type = "file", path = "/abs/v.jsonl" }
)";
  const DaemonConfig nested = parse_config(kText, "deploy/prod/svc.toml").value();
  EXPECT_EQ(file_path(nested.work.at(0)), "deploy/prod/out/w.jsonl");
  EXPECT_EQ(file_path(nested.work.at(1)), "/abs/v.jsonl");
  // No directory part: the config is in the working directory, and so are its files.
  const DaemonConfig here = parse_config(kText, "svc.toml").value();
  EXPECT_EQ(file_path(here.work.at(0)), "out/w.jsonl");
}

TEST(DaemonConfig, LoadConfigReadsTheFileAndResolvesItsPaths) {
  const std::string dir = source_dir() + "/tests/unit/config/testdata";
  const DaemonConfig config = load_config(dir + "/mailer.toml").value();
  EXPECT_EQ(config.file, dir + "/mailer.toml");
  EXPECT_EQ(config.fleet.name, "mailer");
  EXPECT_EQ(file_path(config.work.at(0)), dir + "/out/mail.jsonl");
  EXPECT_EQ(config.fleet.credentials_file, dir + "/svc.creds");
  EXPECT_EQ(config.broadcast.at(0).spec.subject, "member.*.status");
}

TEST(DaemonConfig, SecretFilesAreResolvedAgainstTheConfigsFolder) {
  const auto config = parse_config(R"(name = "svc"
user = "svc"
password_file = "secrets/pw"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
                                   "/etc/natsfleet/svc.toml")
                          .value();
  EXPECT_EQ(config.fleet.auth.user, "svc");
  EXPECT_EQ(config.fleet.auth.password_file, "/etc/natsfleet/secrets/pw");
  const auto nkey = parse_config(R"(name = "svc"
nkey = "/run/secrets/svc.nk"
[[work]]
name = "w"
subject = "a.b"
sink = { type = "stdout" }
)",
                                 "/etc/natsfleet/svc.toml")
                        .value();
  EXPECT_EQ(nkey.fleet.auth.nkey_seed_file, "/run/secrets/svc.nk");
  EXPECT_TRUE(nkey.fleet.auth.user.empty());
}

TEST(DaemonConfig, LoadConfigOnAMissingFileNamesItWithLineZero) {
  const std::string path = "/nonexistent/natsfleet/missing.toml";
  try {
    load_config(path).value();
    FAIL() << "loaded a missing file";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.file(), path);
    EXPECT_EQ(error.line(), 0);
    EXPECT_EQ(error.key(), "");
    EXPECT_EQ(std::string(error.what()).rfind(path + ":0: cannot read", 0), 0u) << error.what();
  }
}

TEST(DaemonConfig, LoadConfigOnADirectoryCannotRead) {
  try {
    load_config(source_dir()).value();
    FAIL() << "loaded a directory";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.line(), 0);
    EXPECT_NE(std::string(error.what()).find("cannot read"), std::string::npos);
  }
}

TEST(DaemonConfig, LoadConfigReportsErrorsWithTheFilesPath) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("natsfleet_config_test_" + std::to_string(::getpid()) + ".toml");
  {
    std::ofstream out(path);
    out << "name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a b\"\nsink = { type = \"stdout\" "
           "}\n";
  }
  try {
    load_config(path.string()).value();
    FAIL() << "accepted a bad subject";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.file(), path.string());
    EXPECT_EQ(error.line(), 4);
    EXPECT_EQ(error.key(), "work[0].subject");
  }
  std::filesystem::remove(path);
}

TEST(ConfigError, MessageIsFileLineKeyProblem) {
  const ConfigError error("svc.toml", 12, "work[1].sink.path", "missing");
  EXPECT_STREQ(error.what(), "svc.toml:12: work[1].sink.path: missing");
  EXPECT_EQ(error.problem(), "missing");
  // No key applies to a syntax error: the key part is left out rather than left empty.
  EXPECT_STREQ(ConfigError("svc.toml", 3, "", "bad value").what(), "svc.toml:3: bad value");
}

}  // namespace
}  // namespace natsfleet::config
