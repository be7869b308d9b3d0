// natsfleet: the command line. Only flags, signal wiring, dispatch and exit codes live here.
//
//   natsfleet run CONFIG [--server URL]... [--log-format text|json]   0 clean, 2 config, 70 fatal
//   natsfleet lint CONFIG...                                          0 clean, 1 findings, 2
//   unreadable natsfleet demo                                                    the story on an
//   embedded broker natsfleet version
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "config/config_error.h"
#include "config/daemon_config.h"
#include "config/lint.h"
#include "daemon/daemon.h"
#include "daemon/logging.h"
#include "demo/fleet_demo.h"

namespace {

constexpr const char* kVersion = "0.1.0";

std::string self_executable(const char* argv0) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return argv0;
  return std::string(buf, static_cast<size_t>(n));
}

// SIGINT/SIGTERM are blocked in every thread and taken by one: the first asks for a clean
// shutdown, a second forces the process out at once.
void watch_signals(natsfleet::daemon::StopRequest& stop) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  std::thread([set, &stop] {
    int signals = 0;
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (++signals == 1) {
        stop.request();
      } else {
        std::fprintf(stderr, "natsfleet: second signal: closing without waiting\n");
        std::_Exit(128 + sig);
      }
    }
  }).detach();
}

int run(const std::string& path, const std::vector<std::string>& servers,
        const std::string& log_format_flag) {
  natsfleet::config::DaemonConfig config;
  try {
    config = natsfleet::config::load_config(path);
  } catch (const natsfleet::config::ConfigError& e) {
    std::fprintf(stderr, "natsfleet: %s\n", e.what());
    return natsfleet::daemon::kExitUsage;
  }
  natsfleet::daemon::setup_logging(log_format_flag.empty() ? config.log_format : log_format_flag);
  natsfleet::daemon::StopRequest stop;
  watch_signals(stop);
  natsfleet::daemon::Daemon daemon(std::move(config), servers);
  return daemon.run(stop);
}

int lint(const std::vector<std::string>& paths) {
  std::vector<natsfleet::config::DaemonConfig> configs;
  for (const auto& path : paths) {
    try {
      configs.push_back(natsfleet::config::load_config(path));
    } catch (const natsfleet::config::ConfigError& e) {
      std::printf("%s\n", e.what());
      return 2;
    }
  }
  auto findings = natsfleet::config::lint_all(configs);
  for (const auto& f : findings)
    std::printf("%s:%d: %s: %s\n", f.file.c_str(), f.line, f.rule.c_str(), f.message.c_str());
  return findings.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread exists, so every thread inherits the mask and only sigwait sees them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a worker sink that died must not kill the daemon

  CLI::App app{
      "natsfleet: JetStream consumers that are safe on many replicas and through broker "
      "failures"};
  app.require_subcommand(1);

  auto* run_cmd = app.add_subcommand("run", "consume as the config says, until SIGTERM/SIGINT");
  std::string config_path, log_format;
  std::vector<std::string> servers;
  run_cmd->add_option("config", config_path, "the TOML config")->required();
  run_cmd->add_option("--server", servers, "broker URL (repeatable); replaces the config's");
  run_cmd->add_option("--log-format", log_format, "text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));

  auto* lint_cmd = app.add_subcommand("lint", "check configs for shapes that break fleets");
  std::vector<std::string> lint_paths;
  lint_cmd->add_option("config", lint_paths, "TOML configs")->required();

  auto* demo = app.add_subcommand(
      "demo", "two replicas share work on an embedded broker through crashes and restarts");
  int messages = 3000;
  demo->add_option("--messages", messages, "how many jobs to publish")
      ->check(CLI::Range(30, 1000000));

  auto* version = app.add_subcommand("version", "print the version");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (run_cmd->parsed()) return run(config_path, servers, log_format);
  if (lint_cmd->parsed()) return lint(lint_paths);
  if (demo->parsed()) {
    natsfleet::daemon::setup_logging("text");
    return natsfleet::demo::run_demo(
        {.self_executable = self_executable(argv[0]), .messages = messages}, std::cout);
  }
  if (version->parsed()) {
    std::cout << "natsfleet " << kVersion << "\n";
    return 0;
  }
  return 2;
}
