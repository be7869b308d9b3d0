// The stream a work declares (WorkSpec::declared_stream): what the broker is asked to create, and
// how an existing stream differs from it (a stream is never changed; the difference is reported).
#pragma once

#include <string>
#include <vector>

#include "nats/stream_config.h"
#include "natsfleet/spec.h"

namespace natsfleet::fleet {

// The stream `spec` declares, as the broker is asked to create it: its subjects default to the
// work's filter subjects. Precondition: spec.declared_stream is set.
nats::StreamConfig declared_stream_config(const WorkSpec& spec);

// Where `actual` (a stream as the broker reports it) differs from `declared`, one phrase each
// ("max_age: 1h declared, 1d on the broker"); empty when it matches. Unset limits compare as the
// broker fills them in (no limit, a two-minute duplicate window); subjects only when declared.
std::vector<std::string> stream_differences(const StreamSpec& declared,
                                            const nats::StreamConfig& actual);

}  // namespace natsfleet::fleet
