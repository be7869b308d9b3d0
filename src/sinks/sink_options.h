// The options of each sink type, one struct per type holding that type's only defaults, and
// SinkConfig, the variant that is the one list of the sink types the daemon knows. Header-only on
// purpose: the config parser (natsfleet_config) fills these while it reads the TOML and must not
// link natsfleet_sinks, which links the relay, Boost.Beast and OpenSSL.
//
//   sinks::SinkConfig sink = sinks::HttpSinkOptions{.url = "https://hooks.example.com/x"};
//   auto made = sinks::make_sink(sink);  // sinks/sink.h: Result<std::unique_ptr<Sink>>
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace natsfleet::sinks {

enum class FsyncPolicy { never, batch };

// Appends one record a line to a file (file_sink.h).
struct FileSinkOptions {
  static constexpr std::string_view kType = "file";
  std::string path;  // the config resolves it against the config file's directory
  FsyncPolicy fsync = FsyncPolicy::never;

  bool operator==(const FileSinkOptions&) const = default;
};

// Writes one record a line to stdout (stdout_sink.h).
struct StdoutSinkOptions {
  static constexpr std::string_view kType = "stdout";

  bool operator==(const StdoutSinkOptions&) const = default;
};

// One long-lived worker process (worker_sink.h). The config sets command and timeout; the rest
// are the supervisor's knobs, which tests shorten.
struct WorkerSinkOptions {
  static constexpr std::string_view kType = "worker";
  std::vector<std::string> command;  // argv, no shell; command[0] is looked up in PATH without '/'
  // An answer must come within this; otherwise the delivery is retried and the worker, considered
  // wedged, is killed (SIGKILL) and restarted.
  std::chrono::milliseconds timeout{30000};
  // Restart waits double from min to max while the worker keeps dying young.
  std::chrono::milliseconds restart_min{100};
  std::chrono::milliseconds restart_max{10000};
  // More than crash_limit deaths within crash_window make the sink unhealthy until a worker has
  // stayed up for stable_after (which also resets the restart backoff).
  int crash_limit = 5;
  std::chrono::milliseconds crash_window{60000};
  std::chrono::milliseconds stable_after{30000};
  // stop(): after closing its stdin, how long the worker may take to finish and exit before
  // SIGTERM, and how long after SIGTERM before SIGKILL.
  std::chrono::milliseconds stop_grace{2000};
  std::chrono::milliseconds term_grace{1000};

  bool operator==(const WorkerSinkOptions&) const = default;
};

// POSTs each record (http_sink.h).
struct HttpSinkOptions {
  static constexpr std::string_view kType = "http";
  std::string url;                             // http://host[:port][/path] or https://...
  std::chrono::milliseconds timeout{10000};    // the whole exchange: connect, TLS, request, reply
  std::map<std::string, std::string> headers;  // sent with every request, after the Nats-* ones
  std::string ca_file;  // PEM trusted in addition to the system CAs (a private CA, tests)
  std::size_t max_idle_connections = 16;

  bool operator==(const HttpSinkOptions&) const = default;
};

// The relay's gateway: browser sessions attached to this replica (websocket_sink.h).
struct WebSocketSinkOptions {
  static constexpr std::string_view kType = "websocket";
  std::string host = "127.0.0.1";  // loopback unless the config says otherwise; IPv6 unbracketed
  std::uint16_t port = 8090;       // 0: any free port (tests)
  // The 1-based subject token naming a message's session key. 0 until it is set: the config sets
  // it to the broadcast subject's first '*' when the sink table has no key_token.
  int key_token = 0;
  std::string web_root;  // static files served beside /ws; empty: none
  // 0 until the daemon sets it: what the file-descriptor limit leaves (descriptor_budget.h). A
  // gateway built with 0 answers every upgrade 503.
  std::size_t max_sessions = 0;
  std::size_t max_http_connections = 1024;   // connections not (yet) upgraded
  std::vector<std::string> allowed_origins;  // page origins that may attach (relay::GatewayOptions)
  // The member tokens' secret is read from this file when the sink starts (trailing line breaks
  // removed); it is never logged. Empty: no tokens.
  std::string token_secret_file;
  std::string member_header;  // set by an authenticating proxy; empty: none

  bool operator==(const WebSocketSinkOptions&) const = default;
};

// host:port as an operator writes it (an IPv6 host in brackets), for logs and lint findings.
inline std::string listen_address(const WebSocketSinkOptions& options) {
  const bool v6 = options.host.find(':') != std::string::npos;
  return (v6 ? "[" + options.host + "]" : options.host) + ":" + std::to_string(options.port);
}

// One sink's options; which alternative it holds is the sink's type. Every sink type is listed
// here and nowhere else: make_sink, the config parser and the lint rules visit this variant.
using SinkConfig = std::variant<FileSinkOptions, StdoutSinkOptions, WorkerSinkOptions,
                                HttpSinkOptions, WebSocketSinkOptions>;

// The config's names of the sink types, in SinkConfig's order.
inline constexpr auto kSinkTypes = []<std::size_t... I>(std::index_sequence<I...>) {
  return std::array<std::string_view, sizeof...(I)>{
      std::variant_alternative_t<I, SinkConfig>::kType...};
}
(std::make_index_sequence<std::variant_size_v<SinkConfig>>());

// "file", "stdout", ...: the config's name of the sink's type.
inline std::string_view sink_type(const SinkConfig& sink) {
  return std::visit([](const auto& options) { return options.kType; }, sink);
}

// The options of the sink type the config names `type`, with that type's defaults; nullopt when
// no sink type has that name.
template <std::size_t I = 0>
std::optional<SinkConfig> default_sink_options(std::string_view type) {
  if constexpr (I == std::variant_size_v<SinkConfig>) {
    return std::nullopt;
  } else {
    if (std::variant_alternative_t<I, SinkConfig>::kType == type)
      return SinkConfig(std::in_place_index<I>);
    return default_sink_options<I + 1>(type);
  }
}

// How long the sink itself waits on one delivery before it gives up on it (a worker's answer, an
// http exchange); nullopt for sinks that do not wait on a downstream that may take its time.
inline std::optional<std::chrono::milliseconds> delivery_timeout(const SinkConfig& sink) {
  if (const auto* worker = std::get_if<WorkerSinkOptions>(&sink)) return worker->timeout;
  if (const auto* http = std::get_if<HttpSinkOptions>(&sink)) return http->timeout;
  return std::nullopt;
}

}  // namespace natsfleet::sinks
