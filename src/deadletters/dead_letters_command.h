// `natsfleet dead-letters list|replay|purge`: the dead letters stored on one or more dead-letter
// subjects, shown, put back on their original subjects, or deleted. Bounded in time like the
// audit: one connection attempt, no reconnects, everything within `timeout`.
//
//   DeadLettersOptions options{.servers = {"nats://127.0.0.1:4222"}, .subjects = {"mail.dead"}};
//   return replay(options, std::cout, std::cerr);   // an exit code
//
// Exit codes: 0 done; 1 some dead letters failed (each named on `err`), the others were done;
// 2 nothing was done: bad options, the broker cannot be reached or stopped answering, or a
// subject no stream holds.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "config/daemon_config.h"
#include "natsfleet/fleet.h"

namespace natsfleet::deadletters {

inline constexpr int kExitDone = 0;
inline constexpr int kExitSomeFailed = 1;
inline constexpr int kExitCannot = 2;

struct DeadLettersOptions {
  std::vector<std::string> servers;
  std::string credentials_file;
  BrokerAuth auth;
  TlsFiles tls;
  std::vector<std::string> subjects;  // dead-letter subjects, no wildcards
  std::chrono::milliseconds timeout{30000};
  bool json = false;
  std::vector<uint64_t> seqs;  // replay, purge: only these dead-letter stream sequences
  std::string to;              // replay: publish here instead of each one's origin subject
};

// --subject flags when given, else every [[work]] dead_letter of `config` (once each, in order).
std::vector<std::string> dead_letter_subjects(const std::vector<std::string>& flags,
                                              const config::DaemonConfig* config);

// One line per dead letter (or the JSON object of listing.h). Shows no header of the original
// message other than the Natsfleet-* ones.
int list(const DeadLettersOptions& options, std::ostream& out, std::ostream& err);

// Each dead letter is published to its Natsfleet-Origin-Subject (or options.to) with its data and
// its original headers (replay_headers), and deleted from the dead-letter stream only once the
// target stream acknowledged it. Its Nats-Msg-Id is derived from its own stream and sequence, so a
// replay run again after a failure between the two steps is stored once (within the target
// stream's duplicate window) and still deleted.
int replay(const DeadLettersOptions& options, std::ostream& out, std::ostream& err);

// Deletes the dead letters (all of each subject, or only options.seqs).
int purge(const DeadLettersOptions& options, std::ostream& out, std::ostream& err);

}  // namespace natsfleet::deadletters
