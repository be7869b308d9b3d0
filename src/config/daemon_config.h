// The daemon's TOML config (ARCHITECTURE.md, "contract: config"), read into typed structs.
// Every problem is a ConfigError naming file, line and dotted key; nothing is guessed or skipped.
//
//   auto config = natsfleet::config::load_config("/etc/natsfleet/mailer.toml");
//   if (!config) return say(config.error().what());
//   natsfleet::Fleet fleet(config->fleet);
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/config_error.h"
#include "natsfleet/fleet.h"
#include "natsfleet/spec.h"
// Header-only: the config does not link the sinks.
#include "sinks/sink_options.h"

namespace natsfleet::config {

struct WorkConfig {
  WorkSpec spec;
  std::string shape = "pull";  // as written: pull | push-queue (spec.shape holds the enum)
  sinks::SinkConfig sink;      // where its messages go
  int sink_line = 0;           // of the sink table
  int line = 0;                // of the [[work]] header
  std::string definition;      // its table, normalised: a reload restarts it when this differs
};

struct BroadcastConfig {
  BroadcastSpec spec;
  sinks::SinkConfig sink;  // a websocket sink's key_token is set (the subject's first '*')
  int sink_line = 0;       // of the sink table
  int line = 0;            // of the [[broadcast]] header
  std::string definition;  // its table, normalised: a reload restarts it when this differs
};

struct DaemonConfig {
  std::string file;  // as given to load_config / parse_config
  // name, servers (empty: embedded broker), credentials_file and tls; files resolved against the
  // config file's directory. Every other field keeps its FleetOptions default.
  FleetOptions fleet;
  std::string health_listen = "127.0.0.1:9464";
  std::string log_format = "text";  // text | json
  // debug adds a line per message decision (received, fenced, held, acked, naked, terminated)
  std::string log_level = "info";  // debug | info | warn | error
  std::chrono::milliseconds shutdown_timeout{10000};
  std::vector<WorkConfig> work;
  std::vector<BroadcastConfig> broadcast;
};

// Every key the parser reads, by table (a sink's by its type), for the docs' check.
struct ConfigKeys {
  std::vector<std::string> top, tls, health, work, broadcast;
  std::vector<std::string> declared_stream;               // a work's `stream` written as a table
  std::map<std::string, std::vector<std::string>> sinks;  // type -> its keys, "type" included
};
ConfigKeys config_keys();

// Reads and checks the file: the config, or its first problem (line 0 and key "" when the file
// cannot be read).
ConfigResult<DaemonConfig> load_config(const std::string& path);

// The same from memory. file_name is used in errors and to resolve relative file paths (its
// directory; none when it has no directory part, leaving such paths relative).
ConfigResult<DaemonConfig> parse_config(std::string_view text, const std::string& file_name);

}  // namespace natsfleet::config
