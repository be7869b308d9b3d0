// sync-status: the relay example, end to end, in one command.
//
//   sync-status [--ports 8081,8082] [--members alice,bob,carol] [--server URL] [--auto N]
//       starts an embedded nats-server (unless --server), the DAEMON_SYNC stream, and two
//       replicas on two ports, prints both URLs, then reads commands from stdin:
//         event <member> [<messages> | error <text>]   publish a sync-complete event
//         kill <a|b>                                   SIGKILL one replica
//         quit
//       --auto N publishes N events, one every 500 ms, round-robin over --members.
//   sync-status replica --name N --server URL --port P [--web-root DIR]
//       one replica (what the launcher runs twice).
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "natsfleet/embedded_broker.h"
#include "natsfleet/natsfleet.h"
#include "replica.h"

extern char** environ;

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, by);)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

// A replica process; its first stdout line says where it listens.
struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
  std::string url;
};

Child spawn_replica(const std::string& self, const std::string& name, const std::string& server,
                    int port, const std::string& web_root) {
  Child child;
  int fds[2];
  if (pipe(fds) != 0) return child;
  std::vector<std::string> args = {self,         "replica", "--name", name,
                                   "--server",   server,    "--port", std::to_string(port),
                                   "--web-root", web_root};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  const int rc = posix_spawn(&child.pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    child.pid = -1;
    return child;
  }
  child.out = fdopen(fds[0], "r");
  char line[512];
  // "listening <name> <url>"
  while (child.out && std::fgets(line, sizeof line, child.out)) {
    auto words = split(line, ' ');
    if (words.size() == 3 && words[0] == "listening") {
      child.url = words[2];
      while (!child.url.empty() && (child.url.back() == '\n' || child.url.back() == '\r'))
        child.url.pop_back();
      break;
    }
  }
  return child;
}

void stop_child(Child& child, int sig) {
  if (child.pid <= 0) return;
  kill(child.pid, sig);
  waitpid(child.pid, nullptr, 0);
  child.pid = -1;
  if (child.out) std::fclose(child.out);
  child.out = nullptr;
}

// The events' stream, DAEMON_SYNC, is the launcher's: a JetStream broadcast that owns its stream
// creates it when absent (as a relay does its own), and once the broadcast is bound the stream is
// there. A DAEMON_SYNC left by an earlier run on the same --server is used as it is. The events
// the broadcast receives are of no use to the launcher.
std::string ensure_stream(natsfleet::Fleet& fleet) {
  auto added = fleet.add_broadcast({.name = "sync-events-stream",
                                    .subject = "daemon.sync.>",
                                    .source = natsfleet::BroadcastSource::jetstream,
                                    .stream = "DAEMON_SYNC",
                                    .create_stream = true,
                                    .stream_max_age = std::chrono::hours(24)},
                                   [](const natsfleet::Message&) {});
  if (!added) return added.error().describe();
  if (auto started = fleet.start(); !started) return started.error().describe();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    const natsfleet::FleetHealth health = fleet.health();
    if (health.ready) return {};
    if (std::chrono::steady_clock::now() > give_up)
      return health.subscriptions.empty() || health.subscriptions[0].last_error.empty()
                 ? "not ready in 20 s"
                 : health.subscriptions[0].last_error;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int run_launcher(const std::string& self, std::vector<int> ports, std::vector<std::string> members,
                 std::string server, int auto_events, const std::string& web_root) {
  std::unique_ptr<natsfleet::EmbeddedBroker> broker;
  if (server.empty()) {
    broker = std::make_unique<natsfleet::EmbeddedBroker>();
    if (auto started = broker->start(); !started) {
      std::fprintf(stderr, "sync-status: %s\n", started.error().describe().c_str());
      return 1;
    }
    server = broker->url();
  }
  // Publishes the events, and owns their stream.
  natsfleet::Fleet publisher({.name = "sync-status-events", .servers = {server}});
  if (auto problem = ensure_stream(publisher); !problem.empty()) {
    std::fprintf(stderr, "sync-status: cannot create stream DAEMON_SYNC on %s: %s\n",
                 server.c_str(), problem.c_str());
    return 1;
  }
  std::printf("broker %s\n", server.c_str());
  std::map<std::string, Child> replicas;
  const char* names[] = {"a", "b"};
  for (size_t i = 0; i < 2; ++i) {
    replicas[names[i]] = spawn_replica(self, names[i], server, ports.at(i), web_root);
    if (replicas[names[i]].url.empty()) {
      std::fprintf(stderr, "sync-status: replica %s did not start\n", names[i]);
      for (auto& [name, child] : replicas) stop_child(child, SIGKILL);
      return 1;
    }
  }
  std::string query = "?members=";
  for (size_t i = 0; i < members.size(); ++i) query += (i ? "," : "") + members[i];
  for (auto& [name, child] : replicas)
    std::printf("replica %s %s%s\n", name.c_str(), child.url.c_str(), query.c_str());
  std::printf(
      "ready: open either URL; type 'event alice 42', 'event bob error IMAP refused', "
      "'kill a' or 'quit'\n");
  std::fflush(stdout);

  int sent = 0;
  auto publish = [&](const std::string& member, const nlohmann::json& fields) {
    nlohmann::json event = fields;
    event["member"] = member;
    auto seq = publisher.publish_to_stream(
        "daemon.sync.complete", event.dump(),
        "event-" + std::to_string(++sent) + "-" + std::to_string(getpid()),
        std::chrono::seconds(5));
    if (seq)
      std::printf("published %llu %s\n", static_cast<unsigned long long>(*seq), member.c_str());
    else
      std::printf("error %s\n", seq.error().describe().c_str());
    std::fflush(stdout);
  };

  std::thread automatic([&] {
    for (int i = 0; i < auto_events && !g_stop; ++i) {
      publish(members[static_cast<size_t>(i) % members.size()], {{"messages", 10 + i}});
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  // A line that cannot be carried out is answered and skipped: leaving here early would leave the
  // replicas and the broker running.
  auto run_command = [&](const std::string& line, const std::vector<std::string>& words) {
    int messages = 1;
    if (words[0] == "event" && words.size() >= 4 && words[2] == "error") {
      // The text is everything after the word "error" that follows the member.
      const size_t member_end = line.find(words[1], line.find(words[0]) + words[0].size());
      const size_t text_at = line.find(words[2], member_end + words[1].size()) + words[2].size();
      publish(words[1], {{"error", line.substr(text_at + 1)}});
    } else if (words[0] == "event" && (words.size() == 2 || words.size() == 3)) {
      if (words.size() == 3) {
        const auto [end, ec] =
            std::from_chars(words[2].data(), words[2].data() + words[2].size(), messages);
        if (ec != std::errc() || end != words[2].data() + words[2].size() || messages < 0) {
          std::printf("error '%s' is not a message count\n", words[2].c_str());
          return;
        }
      }
      publish(words[1], {{"messages", messages}});
    } else if (words[0] == "kill" && words.size() == 2 && replicas.count(words[1])) {
      stop_child(replicas[words[1]], SIGKILL);
      std::printf("killed %s\n", words[1].c_str());
    } else {
      std::printf("unknown command: %s\n", line.c_str());
    }
  };
  std::string line;
  while (!g_stop && std::getline(std::cin, line)) {
    auto words = split(line, ' ');
    if (words.empty()) continue;
    if (words[0] == "quit") break;
    try {
      run_command(line, words);
    } catch (const std::exception& e) {  // an error text that is not UTF-8, say
      std::printf("error %s\n", e.what());
    }
    std::fflush(stdout);
  }
  g_stop = true;
  automatic.join();
  publisher.shutdown(std::chrono::seconds(2));
  for (auto& [name, child] : replicas) stop_child(child, SIGTERM);
  return 0;
}

std::string flag(std::vector<std::string>& args, const std::string& name, std::string fallback) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == name) return args[i + 1];
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);
  const std::string web_root = flag(args, "--web-root", NATSFLEET_SYNC_STATUS_WEB);
  try {
    if (!args.empty() && args[0] == "replica") {
      sync_status::ReplicaOptions options;
      options.name = flag(args, "--name", "replica");
      // Logs to stderr, shared with the launcher: stdout is a pipe the launcher reads only up to
      // the "listening" line, and once full it would block every thread that logs.
      spdlog::set_default_logger(spdlog::stderr_color_mt("replica-" + options.name));
      options.servers = {flag(args, "--server", "nats://127.0.0.1:4222")};
      options.port = std::stoi(flag(args, "--port", "8080"));
      options.web_root = web_root;
      return sync_status::run_replica(options, g_stop);
    }
    // stdout is the launcher's conversation (URLs, "published", "killed"); logs go to stderr.
    spdlog::set_default_logger(spdlog::stderr_color_mt("sync-status"));
    std::vector<int> ports;
    for (const auto& p : split(flag(args, "--ports", "8081,8082"), ','))
      ports.push_back(std::stoi(p));
    if (ports.size() != 2) throw std::invalid_argument("--ports wants two ports, e.g. 8081,8082");
    auto members = split(flag(args, "--members", "alice,bob,carol"), ',');
    if (members.empty()) throw std::invalid_argument("--members is empty");
    return run_launcher(argv[0], ports, members, flag(args, "--server", ""),
                        std::stoi(flag(args, "--auto", "0")), web_root);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sync-status: %s\n", e.what());
    return 2;
  }
}
