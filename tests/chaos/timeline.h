// The run as a picture (timeline.png, drawn by gnuplot): faults as bands over time, broker faults
// above replica faults, under them the acked and handled rates and the duplicates per second.
#pragma once

#include <string>

#include "chaos/checker.h"
#include "chaos/history.h"

namespace natsfleet::chaos {

// Writes timeline.dat and timeline.gp into `dir` and runs gnuplot on them. Returns "" on
// success, otherwise why there is no picture (the data and script are still there).
std::string write_timeline(const std::string& dir, const History& history, const Verdict& verdict);

}  // namespace natsfleet::chaos
