#include "config/sink_reader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>
#include <variant>

#include "base/endpoint.h"
#include "natsfleet/validate.h"

namespace natsfleet::config {
namespace {

using std::chrono::milliseconds;

constexpr std::string_view kFileSinkKeys[] = {"type", "path", "fsync"};
constexpr std::string_view kStdoutSinkKeys[] = {"type"};
constexpr std::string_view kWorkerSinkKeys[] = {"type", "command", "timeout"};
constexpr std::string_view kHttpSinkKeys[] = {"type", "url", "timeout", "headers"};
constexpr std::string_view kWebSocketSinkKeys[] = {
    "type",         "listen",          "key_token",         "web_root",
    "max_sessions", "allowed_origins", "token_secret_file", "member_header"};
// The shortest member-token secret accepted (the gateway's kMinTokenSecretBytes).
constexpr std::size_t kMinTokenSecretBytes = 32;
// scheme://host[:port], as a browser sends it in Origin: no path, no trailing slash.
bool is_origin(std::string_view text) {
  const auto scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0) return false;
  const std::string_view rest = text.substr(scheme_end + 3);
  return !rest.empty() && rest.find_first_of("/?#@ ") == std::string_view::npos;
}

// RFC 9110 token characters: anything else in a header name breaks the request.
bool is_header_name(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

constexpr milliseconds kSinkTimeoutMax = std::chrono::hours(1);
constexpr int kMaxSessions = 1'000'000;

class SinkReader {
 public:
  explicit SinkReader(const SinkPaths& paths) : file_(paths.file), base_dir_(paths.base_dir) {}

  // Each sink type's options start from that type's defaults (sink_options.h), and only the keys
  // present are read over them: no default is written here.
  sinks::SinkConfig read(const TableReader& owner, int& line) const {
    const toml::table* table = owner.table("sink");
    if (!table) owner.fail("sink", "missing (like sink = { type = \"stdout\" })");
    TableReader sink(file_, *table, owner.path("sink"));
    line = sink.line();
    // Which keys a sink knows depends on its type, so the type is read first.
    const std::string type = sink.required_string("type", join_or(sinks::kSinkTypes));
    auto config = sinks::default_sink_options(type);
    if (!config)
      sink.fail("type", "unknown sink type " + in_quotes(type) +
                            " (known: " + join(sinks::kSinkTypes) + ")");
    std::visit([&](auto& options) { read_sink_options(sink, options); }, *config);
    return std::move(*config);
  }

  void read_sink_options(const TableReader& sink, sinks::FileSinkOptions& options) const {
    sink.reject_unknown(kFileSinkKeys, "a file sink");
    auto path = sink.non_empty_string("path");
    if (!path) sink.fail("path", "missing (a file sink needs a path)");
    options.path = resolve(*path);
    if (auto fsync = sink.choice("fsync", {"never", "batch"}))
      options.fsync = *fsync == "batch" ? sinks::FsyncPolicy::batch : sinks::FsyncPolicy::never;
  }

  void read_sink_options(const TableReader& sink, sinks::StdoutSinkOptions&) const {
    sink.reject_unknown(kStdoutSinkKeys, "a stdout sink");
  }

  void read_sink_options(const TableReader& sink, sinks::WorkerSinkOptions& options) const {
    sink.reject_unknown(kWorkerSinkKeys, "a worker sink");
    auto command = sink.strings("command");
    if (!command)
      sink.fail("command",
                "missing (the worker's argv, like [\"/usr/bin/python3\", \"worker.py\"])");
    if (command->empty()) sink.fail("command", "is empty: give the program and its arguments");
    if (command->front().empty()) sink.fail("command", "the program (first element) is empty");
    options.command = std::move(*command);
    if (auto timeout = read_sink_timeout(sink)) options.timeout = *timeout;
  }

  void read_sink_options(const TableReader& sink, sinks::HttpSinkOptions& options) const {
    sink.reject_unknown(kHttpSinkKeys, "an http sink");
    options.url = sink.required_string("url");
    auto url = base::parse_url(options.url);
    if (!url || (url->scheme != "http" && url->scheme != "https"))
      sink.fail("url", in_quotes(options.url) + " is not an http:// or https:// URL with a host");
    if (auto timeout = read_sink_timeout(sink)) options.timeout = *timeout;
    if (const toml::table* headers_table = sink.table("headers")) {
      TableReader headers(file_, *headers_table, sink.path("headers"));
      for (auto&& [name, value] : *headers_table) {
        if (!is_header_name(name.str())) headers.fail(name.str(), "is not a valid header name");
        auto text = headers.string(name.str());
        // A line break in a value would smuggle another header into the request.
        if (text->find_first_of("\r\n") != std::string::npos)
          headers.fail(name.str(), "a header value cannot contain a line break");
        options.headers.emplace(std::string(name.str()), *text);
      }
    }
  }

  void read_sink_options(const TableReader& sink, sinks::WebSocketSinkOptions& options) const {
    sink.reject_unknown(kWebSocketSinkKeys, "a websocket sink");
    if (auto listen = sink.string("listen")) {
      auto address = base::parse_url("tcp://" + *listen);
      if (!address || !address->port || !address->userinfo.empty() || !address->rest.empty())
        sink.fail("listen", in_quotes(*listen) + " is not host:port (like \"127.0.0.1:8090\")");
      options.host = address->host;
      options.port = static_cast<std::uint16_t>(*address->port);
    }
    if (auto token = sink.integer("key_token", 1, Limits::kMaxKeyToken)) options.key_token = *token;
    if (auto root = sink.non_empty_string("web_root")) options.web_root = resolve(*root);
    if (auto max = sink.integer("max_sessions", 1, kMaxSessions))
      options.max_sessions = static_cast<std::size_t>(*max);
    if (auto origins = sink.strings("allowed_origins")) {
      for (const auto& origin : *origins) {
        if (origin != "*" && !is_origin(origin))
          sink.fail("allowed_origins",
                    in_quotes(origin) +
                        " is not an origin: scheme://host[:port] with nothing after, like "
                        "\"https://app.example.com\", or \"*\" for any");
      }
      options.allowed_origins = std::move(*origins);
    }
    if (auto file = sink.non_empty_string("token_secret_file")) {
      options.token_secret_file = resolve(*file);
      check_token_secret(sink, options.token_secret_file);
    }
    if (auto header = sink.non_empty_string("member_header")) {
      if (!is_header_name(*header))
        sink.fail("member_header", in_quotes(*header) + " is not a valid header name");
      options.member_header = *header;
    }
  }

  // The secret is read here only to check it and is not kept: the daemon reads it again when it
  // starts the gateway. Errors name the file, never its content.
  static void check_token_secret(const TableReader& sink, const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) sink.fail("token_secret_file", "cannot read " + path + ": " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    std::string secret = text.str();
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
    if (secret.size() < kMinTokenSecretBytes)
      sink.fail("token_secret_file",
                path + " holds " + std::to_string(secret.size()) + " bytes; a token secret needs " +
                    std::to_string(kMinTokenSecretBytes) +
                    " or more (make one with: openssl rand -hex 32 > " + path + ")");
  }

  static std::optional<milliseconds> read_sink_timeout(const TableReader& sink) {
    auto timeout = sink.duration("timeout", milliseconds(0), kSinkTimeoutMax);
    if (timeout && timeout->count() <= 0) sink.fail("timeout", "must be more than 0s");
    return timeout;
  }

 private:
  // Files named in the config live next to it, wherever the daemon is started from.
  std::string resolve(const std::string& path) const {
    if (std::filesystem::path(path).is_absolute()) return path;
    return (base_dir_ / path).string();
  }

  const std::string& file_;
  const std::filesystem::path& base_dir_;
};

}  // namespace

sinks::SinkConfig read_sink(const TableReader& owner, const SinkPaths& paths, int& line) {
  return SinkReader(paths).read(owner, line);
}

std::map<std::string, std::vector<std::string>> sink_keys() {
  auto list = [](Names names) { return std::vector<std::string>(names.begin(), names.end()); };
  return {{"file", list(kFileSinkKeys)},
          {"stdout", list(kStdoutSinkKeys)},
          {"worker", list(kWorkerSinkKeys)},
          {"http", list(kHttpSinkKeys)},
          {"websocket", list(kWebSocketSinkKeys)}};
}

}  // namespace natsfleet::config
