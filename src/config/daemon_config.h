// The daemon's TOML config (ARCHITECTURE.md, "contract: config"), read into typed structs.
// Every problem is a ConfigError naming file, line and dotted key; nothing is guessed or skipped.
//
//   auto config = natsfleet::config::load_config("/etc/natsfleet/mailer.toml");
//   natsfleet::Fleet fleet(config.fleet);
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/config_error.h"
#include "natsfleet/fleet.h"
#include "natsfleet/spec.h"

namespace natsfleet::config {

// Where a subscription's messages go. Which fields mean something depends on `type`.
struct SinkConfig {
  std::string type;                            // file | stdout | worker | http | websocket
  std::string path;                            // file: resolved against the config file's directory
  std::string fsync = "never";                 // file: never | batch
  std::vector<std::string> command;            // worker: argv, run without a shell
  std::chrono::milliseconds timeout{};         // worker (default 30s) and http (default 10s)
  std::string url;                             // http: http:// or https://
  std::map<std::string, std::string> headers;  // http
  std::string listen = "127.0.0.1:8090";       // websocket: host:port of the gateway
  int key_token = 0;     // websocket: 1-based subject token naming the session key
  std::string web_root;  // websocket: static files served beside /ws (resolved), optional
  int max_sessions = 0;  // websocket; 0: what the file-descriptor limit allows (see the daemon)
  std::vector<std::string> allowed_origins;  // websocket: page origins that may attach
  std::string token_secret_file;  // websocket: the member tokens' HMAC secret (resolved), optional
  std::string member_header;      // websocket: header an authenticating proxy names the member in
  int line = 0;                   // of the sink table
};

struct WorkConfig {
  WorkSpec spec;
  std::string shape = "pull";  // as written: pull | push-queue (spec.shape holds the enum)
  SinkConfig sink;
  int line = 0;  // of the [[work]] header
};

struct BroadcastConfig {
  BroadcastSpec spec;
  SinkConfig sink;
  int line = 0;  // of the [[broadcast]] header
};

struct DaemonConfig {
  std::string file;  // as given to load_config / parse_config
  // name, servers (empty: embedded broker), credentials_file and tls; files resolved against the
  // config file's directory. Every other field keeps its FleetOptions default.
  FleetOptions fleet;
  std::string health_listen = "127.0.0.1:9464";
  std::string log_format = "text";  // text | json
  std::chrono::milliseconds shutdown_timeout{10000};
  std::vector<WorkConfig> work;
  std::vector<BroadcastConfig> broadcast;
};

// Reads and checks the file. Throws ConfigError: line 0 and key "" when the file cannot be read.
DaemonConfig load_config(const std::string& path);

// The same from memory. file_name is used in errors and to resolve relative file paths (its
// directory; none when it has no directory part, leaving such paths relative).
DaemonConfig parse_config(std::string_view text, const std::string& file_name);

}  // namespace natsfleet::config
