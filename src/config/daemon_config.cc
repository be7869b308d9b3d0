#include "config/daemon_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <utility>
#include <variant>

#include "base/duration.h"
#include "base/endpoint.h"
#include "base/subject_tokens.h"
#include "config/sink_reader.h"
#include "config/table_reader.h"
#include "config/variables.h"
#include "natsfleet/validate.h"

namespace natsfleet::config {
namespace {

using std::chrono::milliseconds;

constexpr std::string_view kTopKeys[] = {
    "name", "servers",  "credentials", "user",      "password_file",    "token_file",
    "nkey", "tls",      "log_format",  "log_level", "shutdown_timeout", "health",
    "work", "broadcast"};
constexpr std::string_view kTlsKeys[] = {"ca", "cert", "key"};
constexpr std::string_view kHealthKeys[] = {"listen"};
constexpr std::string_view kWorkKeys[] = {
    "name",      "subject",     "subjects",        "stream",     "shape",
    "ack_wait",  "max_deliver", "max_ack_pending", "start",      "on_missing",
    "heartbeat", "concurrency", "dead_letter",     "retry_min",  "retry_max",
    "sink",      "ordering",    "key_token",       "partitions", "lease"};
constexpr std::string_view kStreamKeys[] = {"name",      "subjects", "storage",
                                            "retention", "replicas", "max_age",
                                            "max_bytes", "max_msgs", "duplicate_window"};
constexpr std::string_view kBroadcastKeys[] = {"name",       "subject",   "concurrency",
                                               "source",     "stream",    "heartbeat",
                                               "max_queued", "key_token", "sink"};

// The ranges of the keys only the daemon has (docs/reference/config.md lists every range);
// the rest are the library's Limits.
constexpr milliseconds kShutdownTimeoutMin{0};
constexpr milliseconds kShutdownTimeoutMax = std::chrono::hours(1);
constexpr milliseconds kRetryMin{1};

// The table as JSON, keys sorted: no comments, layout or inline-table choice, so two configs
// that say the same give the same text.
std::string definition_of(const toml::table& table) {
  std::ostringstream out;
  out << toml::json_formatter{table};
  return out.str();
}

// validate_work judges one field here, so that its answer can be blamed on that field's key: every
// other field of the probe is valid, and max_ack_pending is as large as can be so that no
// concurrency is refused for it.
Result<void> check_work_field(const std::function<void(WorkSpec&)>& set) {
  WorkSpec probe{.name = "probe", .subject = "probe"};
  probe.flow.max_ack_pending = Limits::kMaxAckPending;
  set(probe);
  return validate_work(probe);
}

Result<void> check_broadcast_field(const std::function<void(BroadcastSpec&)>& set) {
  BroadcastSpec probe{.name = "probe", .subject = "probe"};
  set(probe);
  return validate_broadcast(probe);
}

class ConfigParser {
 public:
  explicit ConfigParser(const std::string& file)
      : file_(file), base_dir_(std::filesystem::path(file).parent_path()) {}

  DaemonConfig parse(std::string_view text) {
    toml::table root;
    try {
      root = toml::parse(text, std::string_view(file_));
    } catch (const toml::parse_error& error) {
      throw ConfigError(file_, static_cast<int>(error.source().begin.line), "",
                        std::string(error.description()));
    }
    DaemonConfig config;
    config.file = file_;
    TableReader top(file_, root, "");
    top.reject_unknown(kTopKeys, "the top level");
    read_fleet(top, config);
    read_health(top, config);
    if (auto format = top.choice("log_format", {"text", "json"})) config.log_format = *format;
    if (auto level = top.choice("log_level", {"debug", "info", "warn", "error"}))
      config.log_level = *level;
    if (auto timeout = top.duration("shutdown_timeout", kShutdownTimeoutMin, kShutdownTimeoutMax))
      config.shutdown_timeout = *timeout;

    // A name is one durable consumer or one subscription: two entries with the same name would
    // fight over it, work and broadcast alike. Name -> where it was first declared.
    std::map<std::string, std::string, std::less<>> owners;
    auto claim = [&](const toml::table& table, const std::string& path, const std::string& name) {
      auto [it, fresh] =
          owners.emplace(name, path + " (line " + std::to_string(line_of(table)) + ")");
      if (!fresh)
        TableReader(file_, table, path)
            .fail("name", in_quotes(name) + " is already the name of " + it->second);
    };
    const auto work_tables = top.tables("work");
    for (size_t i = 0; i < work_tables.size(); ++i) {
      config.work.push_back(read_work(*work_tables[i], i));
      claim(*work_tables[i], "work[" + std::to_string(i) + "]", config.work.back().spec.name);
    }
    const auto broadcast_tables = top.tables("broadcast");
    for (size_t i = 0; i < broadcast_tables.size(); ++i) {
      config.broadcast.push_back(read_broadcast(*broadcast_tables[i], i));
      claim(*broadcast_tables[i], "broadcast[" + std::to_string(i) + "]",
            config.broadcast.back().spec.name);
    }
    if (config.work.empty() && config.broadcast.empty())
      top.fail("work", "nothing to consume: declare at least one [[work]] or [[broadcast]]");
    return config;
  }

 private:
  // Files named in the config live next to it, wherever the daemon is started from.
  std::string resolve(const std::string& path) const {
    if (std::filesystem::path(path).is_absolute()) return path;
    return (base_dir_ / path).string();
  }

  void read_fleet(const TableReader& top, DaemonConfig& config) const {
    config.fleet.name = top.required_string("name", "the service name");
    top.check("name", check_name(config.fleet.name));

    if (auto servers = top.strings("servers")) {
      if (servers->empty()) top.fail("servers", "is empty: omit it for the embedded broker");
      const toml::array& items = *top.find("servers")->as_array();
      for (size_t i = 0; i < servers->size(); ++i) {
        const std::string& server = (*servers)[i];
        auto url = base::parse_url(server);
        if (!url || (url->scheme != "nats" && url->scheme != "tls") ||
            (!url->rest.empty() && url->rest != "/"))
          top.fail_at(*items.get(i), "servers[" + std::to_string(i) + "]",
                      in_quotes(server) + " is not a nats:// or tls:// URL with a host");
        if (url->port == 0)
          top.fail_at(*items.get(i), "servers[" + std::to_string(i) + "]",
                      in_quotes(server) + " has port 0");
      }
      config.fleet.servers = std::move(*servers);
    }

    if (auto credentials = top.non_empty_string("credentials"))
      config.fleet.credentials_file = resolve(*credentials);
    read_auth(top, config.fleet);

    if (const toml::table* tls_table = top.table("tls")) {
      TableReader tls(file_, *tls_table, "tls");
      tls.reject_unknown(kTlsKeys, "tls");
      auto ca = tls.non_empty_string("ca");
      auto cert = tls.non_empty_string("cert");
      auto key = tls.non_empty_string("key");
      if (!ca && !cert && !key) top.fail("tls", "is empty: give ca, or cert and key, or all three");
      // A certificate is useless without its key and the other way round.
      if (key && !cert) tls.fail("cert", "missing: a client key needs its certificate");
      if (cert && !key) tls.fail("key", "missing: a client certificate needs its key");
      if (ca) config.fleet.tls.ca = resolve(*ca);
      if (cert) config.fleet.tls.cert = resolve(*cert);
      if (key) config.fleet.tls.key = resolve(*key);
    }
  }

  // user with password_file, token_file or nkey: one way to authenticate, credentials included.
  void read_auth(const TableReader& top, FleetOptions& fleet) const {
    auto user = top.non_empty_string("user");
    auto password = top.non_empty_string("password_file");
    auto token = top.non_empty_string("token_file");
    auto nkey = top.non_empty_string("nkey");
    if (user && !password) top.fail("user", "needs password_file, the file holding its password");
    if (password && !user) top.fail("password_file", "needs user, whose password it holds");
    std::vector<std::string> ways;
    for (const auto& [key, given] : {std::pair{"credentials", !fleet.credentials_file.empty()},
                                     {"user", user.has_value()},
                                     {"token_file", token.has_value()},
                                     {"nkey", nkey.has_value()}})
      if (given) ways.push_back(key);
    if (ways.size() > 1)
      top.fail(ways[1], "and " + ways[0] + " both given: choose one way to authenticate");
    if (user) fleet.auth.user = *user;
    if (password) fleet.auth.password_file = resolve(*password);
    if (token) fleet.auth.token_file = resolve(*token);
    if (nkey) fleet.auth.nkey_seed_file = resolve(*nkey);
  }

  void read_health(const TableReader& top, DaemonConfig& config) const {
    const toml::table* health_table = top.table("health");
    if (!health_table) return;
    TableReader health(file_, *health_table, "health");
    health.reject_unknown(kHealthKeys, "[health]");
    auto listen = health.string("listen");
    if (!listen) return;
    // Port 0 is allowed: the OS picks a free one (tests run many daemons side by side).
    auto url = base::parse_url("tcp://" + *listen);
    if (!url || !url->port || !url->userinfo.empty() || !url->rest.empty())
      health.fail("listen", in_quotes(*listen) + " is not host:port (like \"127.0.0.1:9464\")");
    config.health_listen = *listen;
  }

  WorkConfig read_work(const toml::table& table, size_t index) const {
    TableReader work(file_, table, "work[" + std::to_string(index) + "]");
    work.reject_unknown(kWorkKeys, "[[work]]");
    WorkConfig config;
    config.line = work.line();
    config.definition = definition_of(table);
    WorkSpec& spec = config.spec;
    spec.name = work.required_string("name", "the shared consumer's name");
    work.check("name", check_name(spec.name));
    read_subjects(work, spec);
    read_stream(work, spec);
    if (auto shape = work.choice("shape", {"pull", "push-queue"})) {
      config.shape = *shape;
      spec.shape = *shape == "pull" ? WorkShape::pull : WorkShape::push_queue;
    }
    if (auto start = work.choice("start", {"all", "new"}))
      spec.start = *start == "all" ? StartAt::all : StartAt::new_messages;
    const WorkFields fields{work, spec};
    read_flow(fields);
    read_failure(fields);
    read_ordering(work, spec);
    if (spec.declared_stream)  // judged with the work's order too
      fields.check("stream", [&](WorkSpec& s) {
        s.subject = spec.subject;
        s.subjects = spec.subjects;
        s.per_key = spec.per_key;
        s.declared_stream = spec.declared_stream;
      });
    // Each field passed alone, so what is left is a combination: max_ack_pending below
    // concurrency. Blame the key the user wrote.
    if (auto checked = validate_work(spec); !checked)
      work.fail(work.find("max_ack_pending") || !work.find("concurrency") ? "max_ack_pending"
                                                                          : "concurrency",
                checked.error().message);

    config.sink = read_sink(work, SinkPaths{file_, base_dir_}, config.sink_line);
    if (std::holds_alternative<sinks::WebSocketSinkOptions>(config.sink))
      work.fail("sink",
                "a websocket sink reaches only the sessions on this replica, and work goes to one "
                "replica: relay statuses with a [[broadcast]] that has the websocket sink");
    return config;
  }

  // A [[work]] table's keys going into its spec, each checked on its own as it is read.
  struct WorkFields {
    const TableReader& work;
    WorkSpec& spec;
    // Checks `key` on a default spec that `set` gives the field (and what it is judged with).
    void check(std::string_view key, const std::function<void(WorkSpec&)>& set) const {
      work.check(key, check_work_field(set));
    }
    // A value read (when present) goes into its field of a group of the spec, checked alone.
    template <typename Value, typename Group, typename Field>
    void take(std::string_view key, const std::optional<Value>& value, Group WorkSpec::*group,
              Field Group::*field) const {
      if (!value) return;
      (spec.*group).*field = *value;
      check(key, [&](WorkSpec& s) { (s.*group).*field = (spec.*group).*field; });
    }
  };

  // How fast: ack_wait, max_ack_pending, heartbeat (at most a quarter of ack_wait), concurrency.
  void read_flow(const WorkFields& fields) const {
    const TableReader& work = fields.work;
    WorkSpec& spec = fields.spec;
    fields.take("ack_wait", work.duration("ack_wait", Limits::kMinAckWait, Limits::kMaxAckWait),
                &WorkSpec::flow, &WorkFlow::ack_wait);
    fields.take("max_ack_pending", work.integer("max_ack_pending", 1, Limits::kMaxAckPending),
                &WorkSpec::flow, &WorkFlow::max_ack_pending);
    if (auto heartbeat = work.duration("heartbeat", Limits::kMinHeartbeat, Limits::kMaxHeartbeat)) {
      spec.flow.heartbeat = *heartbeat;
      fields.check("heartbeat", [&](WorkSpec& s) { s.flow = spec.flow; });
    }
    fields.take("concurrency", work.integer("concurrency", 1, Limits::kMaxConcurrency),
                &WorkSpec::flow, &WorkFlow::concurrency);
  }

  // On failure: retry_min and retry_max, max_deliver, on_missing, dead_letter.
  void read_failure(const WorkFields& fields) const {
    const TableReader& work = fields.work;
    WorkSpec& spec = fields.spec;
    // Both first, then one check: retry_max below a retry_min given later is still named.
    const auto retry_min = work.duration("retry_min", kRetryMin, Limits::kMaxBackoff);
    const auto retry_max = work.duration("retry_max", kRetryMin, Limits::kMaxBackoff);
    fields.take("retry_min", retry_min, &WorkSpec::failure, &WorkFailure::retry_min);
    if (retry_max) {
      spec.failure.retry_max = *retry_max;
      fields.check("retry_max", [&](WorkSpec& s) {
        s.failure.retry_min = spec.failure.retry_min;
        s.failure.retry_max = spec.failure.retry_max;
      });
    }
    fields.take("max_deliver", work.integer("max_deliver", -1, Limits::kMaxDeliver),
                &WorkSpec::failure, &WorkFailure::max_deliver);
    if (auto on_missing = work.choice("on_missing", {"recreate", "exit"}))
      spec.failure.missing_consumer =
          *on_missing == "recreate" ? OnMissing::recreate : OnMissing::exit;
    if (auto dead_letter = work.non_empty_string("dead_letter")) {
      spec.failure.dead_letter = *dead_letter;
      // Judged with the work's subject: it must not be one the work itself consumes.
      fields.check("dead_letter", [&](WorkSpec& s) {
        s.subject = spec.subject;
        s.subjects = spec.subjects;
        s.failure.dead_letter = spec.failure.dead_letter;
      });
    }
  }

  // subject, or subjects: several filter subjects on the one consumer (nats-server 2.10 and
  // later; the server's version is checked when the work binds).
  void read_subjects(TableReader& work, WorkSpec& spec) const {
    auto subjects = work.strings("subjects");
    if (!subjects) {
      spec.subject = work.required_string("subject");
      work.check("subject", check_subject(spec.subject));
      return;
    }
    if (work.find("subject")) work.fail("subjects", "subject is set too: set one of them");
    if (subjects->empty()) work.fail("subjects", "is empty");
    const toml::array& items = *work.find("subjects")->as_array();
    for (size_t i = 0; i < subjects->size(); ++i)
      if (auto checked = check_subject((*subjects)[i]); !checked)
        work.fail_at(*items.get(i), work.path("subjects") + "[" + std::to_string(i) + "]",
                     checked.error().message);
    spec.subjects = std::move(*subjects);
    spec.subject = spec.subjects.front();
    work.check("subjects", check_work_field([&](WorkSpec& s) {
                 s.subject.clear();
                 s.subjects = spec.subjects;
               }));
  }

  // stream: a stream's name, or a table declaring the stream the work needs (created when
  // absent, never changed). Each key of the table is checked on its own, as the work's are.
  void read_stream(TableReader& work, WorkSpec& spec) const {
    const toml::node* node = work.find("stream");
    if (!node) return;
    if (!node->is_table()) {
      spec.stream = work.string("stream").value_or("");
      work.check("stream", check_work_field([&](WorkSpec& s) { s.stream = spec.stream; }));
      return;
    }
    TableReader stream(file_, *node->as_table(), work.path("stream"));
    stream.reject_unknown(kStreamKeys, "[work.stream]");
    StreamSpec& declared = spec.declared_stream.emplace();
    auto check = [&](std::string_view key, const std::function<void(StreamSpec&)>& set) {
      stream.check(key, check_work_field([&](WorkSpec& s) {
                     s.subject = spec.subject;
                     s.subjects = spec.subjects;
                     set(s.declared_stream.emplace(StreamSpec{.name = "probe"}));
                   }));
    };
    declared.name = stream.required_string("name", "the stream's name");
    stream.check("name", check_name(declared.name));
    spec.stream = declared.name;
    if (auto subjects = stream.strings("subjects")) {
      declared.subjects = *subjects;
      check("subjects", [&](StreamSpec& s) { s.subjects = declared.subjects; });
    }
    if (auto storage = stream.choice("storage", {"file", "memory"}))
      declared.storage = *storage == "memory" ? StreamStorage::memory : StreamStorage::file;
    if (auto retention = stream.choice("retention", {"limits", "interest", "work-queue"}))
      declared.retention = *retention == "interest"     ? StreamRetention::interest
                           : *retention == "work-queue" ? StreamRetention::work_queue
                                                        : StreamRetention::limits;
    if (auto replicas = stream.integer("replicas", 1, Limits::kMaxReplicas))
      declared.replicas = *replicas;
    if (auto max_age = stream.duration("max_age", milliseconds(0), Limits::kMaxStreamMaxAge))
      declared.max_age = *max_age;
    for (auto [key, field] : {std::pair{"max_bytes", &StreamSpec::max_bytes},
                              std::pair{"max_msgs", &StreamSpec::max_msgs}}) {
      if (auto limit = stream.integer64(key, -1, std::numeric_limits<std::int64_t>::max())) {
        declared.*field = *limit;
        check(key, [&](StreamSpec& s) { s.*field = declared.*field; });
      }
    }
    if (auto window =
            stream.duration("duplicate_window", milliseconds(0), Limits::kMaxStreamMaxAge)) {
      declared.duplicate_window = *window;
      check("duplicate_window", [&](StreamSpec& s) {
        s.max_age = declared.max_age;
        s.duplicate_window = declared.duplicate_window;
      });
    }
  }

  // ordering, key_token and partitions: read together, since each means something only with
  // the others (and with the subject, the heartbeat and ack_wait).
  void read_ordering(TableReader& work, WorkSpec& spec) const {
    if (auto ordering = work.choice("ordering", {"none", "per-key"}))
      spec.per_key =
          *ordering == "per-key" ? std::optional<PerKeyOrder>(PerKeyOrder{}) : std::nullopt;
    const auto key_token = work.integer("key_token", 1, Limits::kMaxKeyToken);
    const auto partitions = work.integer("partitions", 1, Limits::kMaxPartitions);
    const auto lease = work.duration("lease", Limits::kMinLease, Limits::kMaxLease);
    if (spec.per_key && spec.subjects.size() > 1)
      work.fail("ordering", "per-key takes one subject, not several: the key is a token of it");
    if (!spec.per_key) {
      for (const char* key : {"key_token", "partitions", "lease"})
        if (work.find(key)) work.fail(key, "applies to ordering = \"per-key\" only");
      return;
    }
    PerKeyOrder& order = *spec.per_key;
    if (partitions) order.partitions = static_cast<int>(*partitions);
    if (lease) order.lease = *lease;
    if (!key_token) {
      if (!work.find("key_token"))
        work.fail("ordering", "per-key needs key_token: the 1-based token of subject \"" +
                                  spec.subject + "\" that holds the key");
      return;
    }
    order.key_token = static_cast<int>(*key_token);
    auto with_order = [&](WorkSpec& s) {
      s.subject = spec.subject;
      s.per_key = order;
    };
    if (auto checked = check_work_field(with_order); !checked) {
      const std::string& bad = checked.error().message;
      work.fail(bad.find("partitions") != std::string::npos ? "partitions" : "key_token", bad);
      return;
    }
  }

  BroadcastConfig read_broadcast(const toml::table& table, size_t index) const {
    TableReader broadcast(file_, table, "broadcast[" + std::to_string(index) + "]");
    broadcast.reject_unknown(kBroadcastKeys, "[[broadcast]]");
    BroadcastConfig config;
    config.line = broadcast.line();
    config.definition = definition_of(table);
    BroadcastSpec& spec = config.spec;
    spec.name = broadcast.required_string("name");
    broadcast.check("name", check_name(spec.name));
    spec.subject = broadcast.required_string("subject");
    broadcast.check("subject", check_subject(spec.subject));
    if (auto concurrency = broadcast.integer("concurrency", 1, Limits::kMaxConcurrency)) {
      spec.concurrency = *concurrency;
      broadcast.check("concurrency", check_broadcast_field(
                                         [&](BroadcastSpec& s) { s.concurrency = *concurrency; }));
    }
    read_source(broadcast, spec);
    broadcast.check_table(validate_broadcast(spec));
    config.sink = read_sink(broadcast, SinkPaths{file_, base_dir_}, config.sink_line);
    if (auto* websocket = std::get_if<sinks::WebSocketSinkOptions>(&config.sink))
      key_sessions(broadcast, spec, *websocket);
    return config;
  }

  // Which source (core or a stream) and the fields that belong to it alone.
  void read_source(const TableReader& broadcast, BroadcastSpec& spec) const {
    if (auto source = broadcast.choice("source", {"core", "jetstream"}))
      spec.source = *source == "core" ? BroadcastSource::core : BroadcastSource::jetstream;
    if (auto stream = broadcast.string("stream")) {
      spec.stream = *stream;
      broadcast.check("stream", check_name(spec.stream));
    }
    if (auto heartbeat =
            broadcast.duration("heartbeat", Limits::kMinHeartbeat, Limits::kMaxHeartbeat)) {
      spec.heartbeat = *heartbeat;
      broadcast.check("heartbeat", check_broadcast_field([&](BroadcastSpec& s) {
                        s.source = BroadcastSource::jetstream;
                        s.heartbeat = spec.heartbeat;
                      }));
    }
    if (spec.source == BroadcastSource::core && (!spec.stream.empty()))
      broadcast.fail("stream", "applies to source = \"jetstream\" only");
    if (auto max_queued = broadcast.integer("max_queued", 1, Limits::kMaxQueued)) {
      if (spec.source != BroadcastSource::core)
        broadcast.fail("max_queued", "applies to source = \"core\" only (a stream holds the rest)");
      spec.max_queued = *max_queued;
      broadcast.check("max_queued",
                      check_broadcast_field([&](BroadcastSpec& s) { s.max_queued = *max_queued; }));
    }
    const auto tokens = base::subject_tokens(spec.subject);
    if (auto key_token = broadcast.integer("key_token", 1, Limits::kMaxKeyToken)) {
      if (spec.source != BroadcastSource::core)
        broadcast.fail("key_token", "applies to source = \"core\" only");
      if (*key_token < 1 || *key_token > static_cast<int64_t>(tokens.size()))
        broadcast.fail("key_token", "must name one of the " + std::to_string(tokens.size()) +
                                        " tokens of subject " + in_quotes(spec.subject));
      spec.key_token = static_cast<int>(*key_token);
    }
  }

  // A websocket sink's session key: the subject token it names, by default the first '*'.
  void key_sessions(const TableReader& broadcast, BroadcastSpec& spec,
                    sinks::WebSocketSinkOptions& websocket) const {
    const auto tokens = base::subject_tokens(spec.subject);
    if (websocket.key_token == 0) {
      // By default the session key is the subject's first '*': member.*.status -> token 2.
      auto star = std::find(tokens.begin(), tokens.end(), "*");
      if (star == tokens.end())
        broadcast.fail("sink", "key_token is missing and subject " + in_quotes(spec.subject) +
                                   " has no '*' token to name the session key");
      websocket.key_token = static_cast<int>(star - tokens.begin()) + 1;
    } else if (websocket.key_token > static_cast<int>(tokens.size())) {
      broadcast.fail("sink", "key_token " + std::to_string(websocket.key_token) +
                                 " is beyond the " + std::to_string(tokens.size()) +
                                 " tokens of subject " + in_quotes(spec.subject));
    }
    // Statuses for a session key: when the queue is full, a key's older status gives way.
    if (spec.key_token == 0 && spec.source == BroadcastSource::core)
      spec.key_token = websocket.key_token;
  }

  const std::string& file_;
  std::filesystem::path base_dir_;
};

}  // namespace

ConfigResult<DaemonConfig> parse_config(std::string_view text, const std::string& file_name) {
  try {
    return ConfigParser(file_name).parse(text);
  } catch (const ConfigError& problem) {
    return problem;
  }
}

ConfigKeys config_keys() {
  auto list = [](Names names) { return std::vector<std::string>(names.begin(), names.end()); };
  return ConfigKeys{.top = list(kTopKeys),
                    .tls = list(kTlsKeys),
                    .health = list(kHealthKeys),
                    .work = list(kWorkKeys),
                    .broadcast = list(kBroadcastKeys),
                    .declared_stream = list(kStreamKeys),
                    .sinks = sink_keys()};
}

ConfigResult<DaemonConfig> load_config(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    return ConfigError(path, 0, "", "cannot read: is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return ConfigError(path, 0, "", std::string("cannot read: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return ConfigError(path, 0, "", std::string("cannot read: ") + std::strerror(errno));
  return parse_config(text.str(), path);
}

}  // namespace natsfleet::config
