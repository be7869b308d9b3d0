// `natsfleet demo`: the whole story on an embedded broker, told in plain words. Two replicas
// (separate processes) share work; one is killed with SIGKILL mid-way; the broker is restarted;
// the survivor takes over and recovers; a final account shows nothing was lost.
#pragma once

#include <iosfwd>
#include <string>

namespace natsfleet::demo {

struct DemoOptions {
  std::string self_executable;  // re-executed as `<self> demo --replica ...` for each replica
  int messages = 3000;
};

// Returns 0 when every published message was handled, 1 otherwise.
int run_demo(const DemoOptions& options, std::ostream& out);

// The replica side: consumes work "demo-worker" and appends "<payload> <delivered>" per handled
// message to `record_file` until SIGTERM. Returns the process exit code.
int run_demo_replica(const std::string& name, const std::string& server,
                     const std::string& record_file);

}  // namespace natsfleet::demo
