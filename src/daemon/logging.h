// Log set-up for the daemon: plain text for people, or one JSON object a line for log pipelines.
// Both go to stderr (stdout may carry a stdout sink's records).
#pragma once

#include <string>

namespace natsfleet::daemon {

// format: "text" or "json"; level: "debug", "info", "warn" or "error". Applies to every logger
// cloned from the default afterwards.
void setup_logging(const std::string& format, const std::string& level = "info");

}  // namespace natsfleet::daemon
