// natsfleet: the command line. Only flags, signal wiring, dispatch and exit codes live here.
//
//   natsfleet run CONFIG [--server URL]... [--log-format text|json]  0 clean, 2 config, 70 fatal
//   natsfleet lint CONFIG...                                 0 clean, 1 findings, 2 unreadable
//   natsfleet audit [--server URL]... [--config CONFIG] [--json]   0 clean, 1 findings, 2 broker
//   natsfleet dead-letters list|replay|purge [--server URL]... [--subject S]... [--config CONFIG]
//                                                   0 done, 1 some failed, 2 broker/usage/stream
//   natsfleet demo                                           the story on an embedded broker
//   natsfleet version
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "audit/audit.h"
#include "base/duration.h"
#include "config/config_error.h"
#include "config/daemon_config.h"
#include "config/lint.h"
#include "daemon/daemon.h"
#include "daemon/logging.h"
#include "deadletters/dead_letters_command.h"
#include "demo/fleet_demo.h"
#include "natsfleet/redact.h"

namespace {

constexpr const char* kVersion = NATSFLEET_VERSION;  // the project's, from CMake

std::string self_executable(const char* argv0) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return argv0;
  return std::string(buf, static_cast<size_t>(n));
}

// SIGINT/SIGTERM/SIGHUP are blocked in every thread and taken by one: SIGHUP asks for a reload;
// the first SIGINT/SIGTERM asks for a clean shutdown, a second forces the process out at once.
void watch_signals(natsfleet::daemon::StopRequest& stop) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  std::thread([set, &stop] {
    int signals = 0;
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (sig == SIGHUP) {
        stop.request_reload();
      } else if (++signals == 1) {
        stop.request();
      } else {
        std::fprintf(stderr, "natsfleet: second signal: closing without waiting\n");
        std::_Exit(128 + sig);
      }
    }
  }).detach();
}

// A command-line tool's signals: SIGINT/SIGTERM end it at once, as they end any such tool.
void end_on_interrupt() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

// The config at `path`, or nothing once its error (file, line, key) is printed to `out`.
std::optional<natsfleet::config::DaemonConfig> load_or_say(const std::string& path, FILE* out,
                                                           const char* prefix) {
  auto config = natsfleet::config::load_config(path);
  if (config) return std::move(*config);
  std::fprintf(out, "%s%s\n", prefix, config.error().what());
  return std::nullopt;
}

int run(const std::string& path, const std::vector<std::string>& servers,
        const std::string& log_format_flag) {
  // Blocked before any thread starts, like SIGINT/SIGTERM in main(): only the signal thread
  // takes it. Elsewhere (the demo, lint) it ends the process as usual.
  sigset_t hangup;
  sigemptyset(&hangup);
  sigaddset(&hangup, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &hangup, nullptr);
  auto config = load_or_say(path, stderr, "natsfleet: ");
  if (!config) return natsfleet::daemon::kExitUsage;
  natsfleet::daemon::setup_logging(log_format_flag.empty() ? config->log_format : log_format_flag,
                                   config->log_level);
  natsfleet::daemon::StopRequest stop;
  try {
    watch_signals(stop);
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "natsfleet: cannot start the signal thread: %s\n", e.what());
    return natsfleet::daemon::kExitFatal;
  }
  natsfleet::daemon::Daemon daemon(std::move(*config), servers);
  return daemon.run(stop);
}

int lint(const std::vector<std::string>& paths) {
  std::vector<natsfleet::config::DaemonConfig> configs;
  for (const auto& path : paths) {
    auto config = load_or_say(path, stdout, "");
    if (!config) return 2;
    configs.push_back(std::move(*config));
  }
  auto findings = natsfleet::config::lint_all(configs);
  for (const auto& f : findings)
    std::printf("%s:%d: %s: %s\n", f.file.c_str(), f.line, f.rule.c_str(),
                natsfleet::redact(f.message).c_str());
  return findings.empty() ? 0 : 1;
}

struct AuditFlags {
  std::vector<std::string> servers;
  std::string config_path;
  bool json = false;
  std::string interval = "3s";
  std::string timeout = "20s";
};

int audit(const AuditFlags& flags) {
  end_on_interrupt();  // the audit only reads
  natsfleet::audit::AuditOptions options;
  if (!flags.config_path.empty()) {
    options.config = load_or_say(flags.config_path, stderr, "natsfleet: ");
    if (!options.config) return 2;
    options.credentials_file = options.config->fleet.credentials_file;
    options.auth = options.config->fleet.auth;
    options.tls = options.config->fleet.tls;
  }
  options.servers = natsfleet::audit::audit_servers(
      flags.servers, options.config ? options.config->fleet.servers : std::vector<std::string>{});
  // Both were checked as durations by the flag parser.
  options.interval = *natsfleet::base::parse_duration(flags.interval);
  options.timeout = *natsfleet::base::parse_duration(flags.timeout);
  // The table and the JSON own stdout (spdlog's own default logger writes there): logs go to
  // stderr.
  natsfleet::daemon::setup_logging("text");

  auto report = natsfleet::audit::run_audit(options);
  if (!report) {
    std::fprintf(stderr, "natsfleet: audit: %s\n",
                 natsfleet::redact(report.error().describe()).c_str());
    return 2;
  }
  std::cout << natsfleet::redact(flags.json ? natsfleet::audit::render_json(*report) + "\n"
                                            : natsfleet::audit::render_table(*report));
  return report->findings.empty() ? 0 : 1;
}

struct DeadLetterFlags {
  std::vector<std::string> servers;
  std::vector<std::string> subjects;
  std::string config_path;
  bool json = false;
  std::string timeout = "30s";
  std::vector<uint64_t> seqs;
  std::string to;
};

int dead_letters(const std::string& command, const DeadLetterFlags& flags) {
  // Each dead letter is deleted only after its replay was stored: stopping midway loses nothing.
  end_on_interrupt();
  natsfleet::deadletters::DeadLettersOptions options;
  std::optional<natsfleet::config::DaemonConfig> config;
  if (!flags.config_path.empty()) {
    config = load_or_say(flags.config_path, stderr, "natsfleet: ");
    if (!config) return natsfleet::deadletters::kExitCannot;
    options.credentials_file = config->fleet.credentials_file;
    options.auth = config->fleet.auth;
    options.tls = config->fleet.tls;
  }
  options.servers = !flags.servers.empty() ? flags.servers
                    : config               ? config->fleet.servers
                                           : std::vector<std::string>{};
  options.subjects =
      natsfleet::deadletters::dead_letter_subjects(flags.subjects, config ? &*config : nullptr);
  options.timeout = *natsfleet::base::parse_duration(flags.timeout);  // checked by the parser
  options.json = flags.json;
  options.seqs = flags.seqs;
  options.to = flags.to;
  natsfleet::daemon::setup_logging("text");  // stdout carries the listing only

  if (command == "list") return natsfleet::deadletters::list(options, std::cout, std::cerr);
  if (command == "replay") return natsfleet::deadletters::replay(options, std::cout, std::cerr);
  return natsfleet::deadletters::purge(options, std::cout, std::cerr);
}

// A CLI11 check: the flag must be a duration like "3s" or "500ms".
std::string check_duration(const std::string& text) {
  return natsfleet::base::parse_duration(text)
             ? std::string()
             : "'" + text + "' is not a duration: use a string like \"500ms\", \"3s\" or \"1m\"";
}

CLI::App* add_audit_command(CLI::App& app, AuditFlags& audit_flags) {
  auto* audit_cmd = app.add_subcommand(
      "audit", "read-only check of every stream and consumer on the broker, sampled twice");
  audit_cmd->add_option("--server", audit_flags.servers,
                        "broker URL (repeatable); default: the config's, else " +
                            std::string(natsfleet::audit::kDefaultServer));
  audit_cmd->add_option("--config", audit_flags.config_path,
                        "a daemon config: its servers, credentials, and its [[work]] checked");
  audit_cmd->add_flag("--json", audit_flags.json, "one JSON object instead of the table");
  audit_cmd->add_option("--interval", audit_flags.interval, "time between the two samples")
      ->check(check_duration)
      ->capture_default_str();
  audit_cmd->add_option("--timeout", audit_flags.timeout, "the whole audit, connecting included")
      ->check(check_duration)
      ->capture_default_str();

  return audit_cmd;
}

// `dead_command` is set to the subcommand given: list, replay or purge.
CLI::App* add_dead_letter_commands(CLI::App& app, DeadLetterFlags& dead_flags,
                                   std::string& dead_command) {
  auto* dead_cmd = app.add_subcommand(
      "dead-letters", "list, replay or purge the messages works gave up on (their dead_letter)");
  dead_cmd->require_subcommand(1);
  auto common = [&](CLI::App* sub) {
    sub->add_option("--server", dead_flags.servers,
                    "broker URL (repeatable); required unless the config has servers");
    sub->add_option("--subject", dead_flags.subjects,
                    "a dead-letter subject (repeatable); default: every dead_letter in --config");
    sub->add_option("--config", dead_flags.config_path,
                    "a daemon config: its servers, credentials and [[work]] dead_letter subjects");
    sub->add_flag("--json", dead_flags.json, "one JSON object instead of lines for people");
    sub->add_option("--timeout", dead_flags.timeout, "the whole command, connecting included")
        ->check(check_duration)
        ->capture_default_str();
    sub->callback([&dead_command, sub] { dead_command = sub->get_name(); });
  };
  common(dead_cmd->add_subcommand("list", "one line per dead letter: where from, why, its size"));
  auto* replay_cmd = dead_cmd->add_subcommand(
      "replay", "publish each to its original subject, then delete it once the stream stored it");
  common(replay_cmd);
  replay_cmd->add_option("--to", dead_flags.to, "publish to this subject instead");
  replay_cmd
      ->add_option("--seq", dead_flags.seqs, "only this dead-letter stream sequence (repeatable)")
      ->check(CLI::PositiveNumber);
  auto* purge_cmd = dead_cmd->add_subcommand("purge", "delete them");
  common(purge_cmd);
  purge_cmd
      ->add_option("--seq", dead_flags.seqs, "only this dead-letter stream sequence (repeatable)")
      ->check(CLI::PositiveNumber);

  return dead_cmd;
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

  auto* run_cmd = app.add_subcommand(
      "run", "consume as the config says, until SIGTERM/SIGINT (SIGHUP reloads the config)");
  std::string config_path, log_format;
  std::vector<std::string> servers;
  run_cmd->add_option("config", config_path, "the TOML config")->required();
  run_cmd->add_option("--server", servers, "broker URL (repeatable); replaces the config's");
  run_cmd->add_option("--log-format", log_format, "text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));

  auto* lint_cmd = app.add_subcommand("lint", "check configs for shapes that break fleets");
  std::vector<std::string> lint_paths;
  lint_cmd->add_option("config", lint_paths, "TOML configs")->required();

  AuditFlags audit_flags;
  auto* audit_cmd = add_audit_command(app, audit_flags);
  DeadLetterFlags dead_flags;
  std::string dead_command;
  auto* dead_cmd = add_dead_letter_commands(app, dead_flags, dead_command);

  auto* demo = app.add_subcommand(
      "demo", "two replicas share work on an embedded broker through crashes and restarts");
  int messages = 3000;
  demo->add_option("--messages", messages, "how many jobs to publish")
      ->check(CLI::Range(30, 1000000));

  auto* version = app.add_subcommand("version", "print the version");
  app.set_version_flag("--version", std::string("natsfleet ") + kVersion, "print the version");
  auto* help = app.add_subcommand("help", "print this help");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (run_cmd->parsed()) return run(config_path, servers, log_format);
  if (lint_cmd->parsed()) return lint(lint_paths);
  if (audit_cmd->parsed()) return audit(audit_flags);
  if (dead_cmd->parsed()) return dead_letters(dead_command, dead_flags);
  if (demo->parsed()) {
    natsfleet::daemon::setup_logging("text");
    return natsfleet::demo::run_demo(
        {.self_executable = self_executable(argv[0]), .messages = messages}, std::cout);
  }
  if (help->parsed()) {
    // app.help() would describe the selected subcommand, `help` itself.
    std::cout << app.get_formatter()->make_help(&app, "natsfleet", CLI::AppFormatMode::Normal);
    return 0;
  }
  if (version->parsed()) {
    std::cout << "natsfleet " << kVersion << "\n";
    return 0;
  }
  return 2;
}
