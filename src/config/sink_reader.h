// A work's or broadcast's `sink` table, read by its type: the type first, then only that type's
// keys over its defaults (sinks/sink_options.h). Every problem is a ConfigError naming the file,
// the line and the dotted key.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "config/table_reader.h"
#include "sinks/sink_options.h"

namespace natsfleet::config {

// Where the config file is: its name for errors, its directory for relative paths.
struct SinkPaths {
  const std::string& file;
  const std::filesystem::path& base_dir;
};

// The sink of `owner` (its `sink` key); `line` is set to the sink table's line.
sinks::SinkConfig read_sink(const TableReader& owner, const SinkPaths& paths, int& line);

// Each sink type's keys, "type" included.
std::map<std::string, std::vector<std::string>> sink_keys();

}  // namespace natsfleet::config
