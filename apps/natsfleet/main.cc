// natsfleet: the command line. Only flags, dispatch and exit codes live here.
#include <CLI/CLI.hpp>
#include <climits>
#include <iostream>
#include <string>
#include <unistd.h>

#include "demo/fleet_demo.h"

namespace {

constexpr const char* kVersion = "0.1.0";

std::string self_executable(const char* argv0) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return argv0;
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"natsfleet: JetStream consumers that are safe on many replicas and through broker "
               "failures"};
  app.require_subcommand(1);

  auto* version = app.add_subcommand("version", "print the version");

  auto* demo = app.add_subcommand(
      "demo", "two replicas share work on an embedded broker through a crash and a restart");
  int messages = 3000;
  std::string replica, server, out;
  demo->add_option("--messages", messages, "how many jobs to publish")->check(CLI::Range(30, 1000000));
  // The demo re-runs itself as each replica process.
  demo->add_option("--replica", replica)->group("");
  demo->add_option("--server", server)->group("");
  demo->add_option("--out", out)->group("");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (version->parsed()) {
    std::cout << "natsfleet " << kVersion << "\n";
    return 0;
  }
  if (demo->parsed()) {
    if (!replica.empty()) return natsfleet::demo::run_demo_replica(replica, server, out);
    return natsfleet::demo::run_demo({.self_executable = self_executable(argv[0]),
                                      .messages = messages},
                                     std::cout);
  }
  return 2;
}
