// The logger a Fleet writes to: spdlog's default logger under the fleet's name, or the
// application's FleetOptions::log_to with each line's fields.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>

#include "natsfleet/fleet.h"

namespace natsfleet::fleet {

std::shared_ptr<spdlog::logger> make_fleet_logger(const FleetOptions& options);

}  // namespace natsfleet::fleet
