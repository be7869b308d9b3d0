// What `natsfleet audit` prints: an aligned table for people (fits 120 columns, long cells wrap)
// or one JSON object for scripts.
//
//   {"servers":["nats://..."],"streams":3,"consumers":5,"findings":[{"stream":"JOBS",
//    "consumer":"jobs-worker","finding":"idle-pull","evidence":"...","action":"..."}]}
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "audit/findings.h"

namespace natsfleet::audit {

struct AuditReport {
  std::vector<std::string> servers;
  size_t streams = 0;
  size_t consumers = 0;
  std::vector<Finding> findings;
};

// "2 findings in 3 streams, 5 consumers" or "no findings in 1 stream, 0 consumers".
std::string summary_line(const AuditReport& report);

// Columns STREAM, CONSUMER, FINDING, EVIDENCE, WHAT TO DO, then the summary line. EVIDENCE and
// WHAT TO DO share what the first three columns leave of `width`, wrapped at spaces.
std::string render_table(const AuditReport& report, size_t width = 120);

// One line of JSON; a finding without a stream has "stream": null.
std::string render_json(const AuditReport& report);

}  // namespace natsfleet::audit
