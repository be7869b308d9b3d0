// The daemon's TOML config loader. Every problem must be a ConfigError (exit 2 naming file,
// line and key); any other exception would escape `natsfleet run` and abort it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/daemon_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)natsfleet::config::parse_config(text, "fuzz/config.toml");
  } catch (const natsfleet::config::ConfigError&) {
  }
  return 0;
}
