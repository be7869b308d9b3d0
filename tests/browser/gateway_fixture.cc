// Serves the member status page from a real WebSocketGateway and runs a Node script that drives
// headless Chromium against it. The script controls the relay through its stdout, one command a
// line; the fixture answers on the script's stdin:
//
//   script -> fixture   "@fixture deliver <member> <json>"  fixture -> script  "delivered <member>
//   <n>"
//                       "@fixture stop"                                        "stopped"
//                       "@fixture start"   (same port)                         "started"
//   on every attach                                                            "attached <member>"
//
// Every other line the script prints is passed through. The exit code is the script's; 77 (skip)
// when Chromium or the script's packages are missing outside CI, where they must be present.
//
//   gateway_fixture --web-root DIR --node NODE --script FILE [--timeout-s N]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "relay/session_registry.h"
#include "relay/websocket_gateway.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using natsfleet::relay::GatewayOptions;
using natsfleet::relay::SessionRegistry;
using natsfleet::relay::WebSocketGateway;

constexpr int kSkip = 77;
constexpr std::string_view kCommandPrefix = "@fixture ";
constexpr const char* kChromium = "/usr/bin/chromium";

struct Args {
  fs::path web_root;
  std::string node = "node";
  fs::path script;
  int timeout_s = 120;
};

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--web-root") {
      args.web_root = value;
    } else if (flag == "--node") {
      args.node = value;
    } else if (flag == "--script") {
      args.script = value;
    } else if (flag == "--timeout-s") {
      args.timeout_s = std::atoi(value);
    } else {
      std::cerr << "gateway_fixture: unknown flag " << flag << "\n";
      std::exit(2);
    }
  }
  if (args.web_root.empty() || args.script.empty() || args.timeout_s <= 0) {
    std::cerr
        << "usage: gateway_fixture --web-root DIR --node NODE --script FILE [--timeout-s N]\n";
    std::exit(2);
  }
  return args;
}

// What the test needs from the machine; empty when all is there.
std::string missing_prerequisite(const Args& args) {
  if (!fs::exists(kChromium)) return std::string(kChromium) + " is not installed";
  if (!fs::exists(args.script.parent_path() / "node_modules" / "playwright-core")) {
    return "playwright-core is not installed in " + args.script.parent_path().string() +
           " (npm ci --prefix tests/browser)";
  }
  return {};
}

// The script's stdin; written from the attach hook's thread and from the command loop.
class ScriptInput {
 public:
  explicit ScriptInput(int fd) : fd_(fd) {}
  void send(const std::string& line) {
    std::lock_guard lock(mu_);
    const std::string text = line + "\n";
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
      if (n <= 0) return;  // the script has exited; its exit code tells the story
      done += static_cast<std::size_t>(n);
    }
  }

 private:
  std::mutex mu_;
  int fd_;
};

// The gateway under test, restartable on the same port so the page's reconnect can be checked.
class Relay {
 public:
  Relay(fs::path web_root, ScriptInput& script) : web_root_(std::move(web_root)), script_(script) {}

  bool start(uint16_t port) {
    GatewayOptions options;
    options.port = port;
    options.web_root = web_root_;
    options.stop_timeout = std::chrono::milliseconds(500);
    gateway_ = std::make_unique<WebSocketGateway>(options, registry_);
    gateway_->on_attach([this](const std::string& member) { script_.send("attached " + member); });
    const auto started = gateway_->start();
    if (!started) {
      std::cerr << "gateway_fixture: " << started.error().describe() << "\n";
      return false;
    }
    port_ = static_cast<uint16_t>(gateway_->port());
    return true;
  }
  bool restart() { return start(port_); }
  void stop() {
    if (gateway_) gateway_->stop();
  }
  uint16_t port() const { return port_; }
  SessionRegistry& registry() { return registry_; }

 private:
  const fs::path web_root_;
  ScriptInput& script_;
  SessionRegistry registry_;
  std::unique_ptr<WebSocketGateway> gateway_;
  uint16_t port_ = 0;
};

// Runs one "@fixture ..." command and returns the answer line.
std::string run_command(std::string_view command, Relay& relay) {
  if (command == "stop") {
    relay.stop();
    return "stopped";
  }
  if (command == "start") return relay.restart() ? "started" : "start-failed";
  if (command.rfind("deliver ", 0) == 0) {
    const std::string_view rest = command.substr(8);
    const auto space = rest.find(' ');
    if (space == std::string_view::npos) return "error deliver needs a member and a status";
    const std::string member(rest.substr(0, space));
    const auto payload = std::make_shared<const std::string>(rest.substr(space + 1));
    const std::size_t reached = relay.registry().deliver(member, payload);
    return "delivered " + member + " " + std::to_string(reached);
  }
  return "error unknown command: " + std::string(command);
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  ::signal(SIGPIPE, SIG_IGN);

  if (const std::string missing = missing_prerequisite(args); !missing.empty()) {
    if (std::getenv("CI") != nullptr) {
      std::cerr << "gateway_fixture: " << missing << "; scripts/install-deps.sh installs it\n";
      return 1;
    }
    std::cout << "gateway_fixture: skipped: " << missing << "\n";
    return kSkip;
  }

  int to_script[2];
  int from_script[2];
  if (::pipe2(to_script, O_CLOEXEC) != 0 || ::pipe2(from_script, O_CLOEXEC) != 0) {
    std::perror("gateway_fixture: pipe");
    return 1;
  }
  ScriptInput script_input(to_script[1]);
  Relay relay(args.web_root, script_input);
  if (!relay.start(0)) return 1;

  const std::string url = "http://127.0.0.1:" + std::to_string(relay.port()) + "/";
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "GATEWAY_URL=", 12) != 0) env_strings.emplace_back(*e);
  }
  env_strings.push_back("GATEWAY_URL=" + url);
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string node = args.node;
  std::string script = args.script.string();
  char* child_argv[] = {node.data(), script.data(), nullptr};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_script[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_script[1], STDOUT_FILENO);
  pid_t child = 0;
  const int spawned =
      ::posix_spawnp(&child, node.c_str(), &actions, nullptr, child_argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_script[0]);
  ::close(from_script[1]);
  if (spawned != 0) {
    std::cerr << "gateway_fixture: cannot run " << node << ": " << std::strerror(spawned) << "\n";
    relay.stop();
    return 1;
  }

  // A hung browser must not hang the test run.
  std::atomic<bool> finished{false};
  std::atomic<bool> timed_out{false};
  std::thread watchdog([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(args.timeout_s);
    while (!finished && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!finished) {
      timed_out = true;
      ::kill(child, SIGKILL);
    }
  });

  std::string pending;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(from_script[0], chunk, sizeof chunk);
    if (n <= 0) break;
    pending.append(chunk, static_cast<std::size_t>(n));
    for (auto newline = pending.find('\n'); newline != std::string::npos;
         newline = pending.find('\n')) {
      const std::string line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      if (line.rfind(kCommandPrefix, 0) == 0) {
        script_input.send(run_command(std::string_view(line).substr(kCommandPrefix.size()), relay));
      } else {
        std::cout << line << "\n" << std::flush;
      }
    }
  }
  if (!pending.empty()) std::cout << pending << "\n";

  int status = 0;
  ::waitpid(child, &status, 0);
  finished = true;
  watchdog.join();
  relay.stop();
  ::close(to_script[1]);
  ::close(from_script[0]);

  if (timed_out) {
    std::cerr << "gateway_fixture: the browser test did not finish within " << args.timeout_s
              << " s\n";
    return 1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  std::cerr << "gateway_fixture: the browser test died of signal " << WTERMSIG(status) << "\n";
  return 1;
}
