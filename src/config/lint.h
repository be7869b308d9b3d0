// Lint rules for daemon configs that parse but are risky: the config is valid, the deployment is
// likely wrong. `natsfleet lint a.toml b.toml` prints one finding a line, "file:line: rule:
// message".
#pragma once

#include <string>
#include <vector>

#include "config/daemon_config.h"

namespace natsfleet::config {

// Rules (all the same severity):
//   duplicate-subject             two different work names consume the same subject: each message
//                                 is handled twice
//   broadcast-shadows-work        a broadcast named like a work subscription
//   ack-wait-below-sink-timeout   ack_wait shorter than the http/worker sink's timeout
//   ack-pending-below-concurrency max_ack_pending below concurrency. parse_config already refuses
//                                 this; the rule stays for configs built in code.
//   plain-http-remote             an http sink on plain http:// to a non-loopback host
//   unlimited-redelivery          work with max_deliver = -1: a poison message loops for ever
//   no-dead-letter                work with a max_deliver limit and no dead_letter: a message
//                                 terminated at the limit is kept nowhere
//   stdout-sink-for-work          work acknowledged once written to stdout, which nothing keeps
//   embedded-broker               no servers: fine for a demo, not for production
struct LintFinding {
  std::string file;
  int line = 0;  // the offending table (or 1, the file itself, for embedded-broker)
  std::string rule;
  std::string message;
};

// "file:line: rule: message"
std::string to_string(const LintFinding& finding);

// The rules within one file, ordered by line.
std::vector<LintFinding> lint(const DaemonConfig& config);

// lint() of each file, plus duplicate-subject and broadcast-shadows-work across files. The same
// work name in several files is the same shared consumer (replicas or services sharing work), not
// a duplicate. Grouped by file in the order given, ordered by line within a file.
std::vector<LintFinding> lint_all(const std::vector<DaemonConfig>& configs);

}  // namespace natsfleet::config
