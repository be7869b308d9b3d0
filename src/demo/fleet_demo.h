// `natsfleet demo`: the whole story on an embedded broker, told in plain words. Two replicas of
// `natsfleet run` (separate processes) share work into file sinks; one is killed with SIGKILL;
// the broker is killed and restarted; the shared consumer is deleted by hand; the survivor
// recovers each time, and a final account shows what was handled, repeated and lost.
#pragma once

#include <iosfwd>
#include <string>

namespace natsfleet::demo {

struct DemoOptions {
  std::string self_executable;  // the natsfleet binary, run as `<self> run <config>` per replica
  int messages = 3000;
};

// Returns 0 when every published message was handled, 1 otherwise.
int run_demo(const DemoOptions& options, std::ostream& out);

}  // namespace natsfleet::demo
