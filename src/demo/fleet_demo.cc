#include "demo/fleet_demo.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <thread>
#include <vector>

#include "base/child_process.h"
#include "base/file_descriptor.h"
#include "broker/embedded_broker.h"
#include "nats/connection.h"
#include "nats/jetstream_api.h"

namespace natsfleet::demo {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kStream = "DEMO";
constexpr const char* kSubject = "demo.jobs";
constexpr const char* kWork = "demo-worker";

template <typename F>
bool wait_until(F&& done, std::chrono::milliseconds timeout) {
  const auto until = Clock::now() + timeout;
  while (Clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

// GET http://127.0.0.1:<port><path>: the status code (0 when nothing answered) and the body.
std::pair<int, std::string> get_loopback(int port, const std::string& path) {
  const base::FileDescriptor socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket) return {0, {}};
  const int fd = socket.get();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      for (ssize_t got; (got = ::read(fd, buf, sizeof buf)) > 0;)
        reply.append(buf, static_cast<size_t>(got));
    }
  }
  if (reply.rfind("HTTP/1.", 0) != 0 || reply.size() < 12) return {0, {}};
  const size_t body = reply.find("\r\n\r\n");
  return {std::atoi(reply.c_str() + 9), body == std::string::npos ? "" : reply.substr(body + 4)};
}

// What a replica's file sink holds: payload -> times handled, and redeliveries among them.
struct Handled {
  std::map<std::string, int> times;
  size_t records = 0;
  size_t redelivered = 0;
};

// One `natsfleet run` process, its config, its sink file and its log.
struct Replica {
  std::string name;
  std::string dir;
  pid_t pid = -1;
  size_t log_lines_shown = 0;
  int health_port = 0;

  std::string config_file() const { return dir + "/" + name + ".toml"; }
  std::string sink_file() const { return dir + "/" + name + ".jsonl"; }
  // Where the sink file's lines went when its disk "filled up" (scene 7).
  std::string earlier_sink_file() const { return sink_file() + ".before-full"; }
  std::string log_file() const { return dir + "/" + name + ".log"; }

  void write_config() {
    health_port = broker::free_loopback_port();
    std::ofstream out(config_file());
    out << "# written by natsfleet demo\n"
        << "name = \"" << name << "\"\n"
        << "shutdown_timeout = \"5s\"\n"
        << "[health]\n"
        << "listen = \"127.0.0.1:" << health_port << "\"\n"
        << "[[work]]\n"
        << "name = \"" << kWork << "\"\n"
        << "subject = \"" << kSubject << "\"\n"
        << "ack_wait = \"3s\"\n"
        << "heartbeat = \"1s\"\n"
        << "concurrency = 4\n"
        << "sink = { type = \"file\", path = \"" << sink_file() << "\" }\n";
  }

  bool spawn(const std::string& self, const std::string& server) {
    write_config();
    // The parent blocks SIGINT/SIGTERM for its signal thread; the replica must get them.
    auto child = base::spawn_child({self, "run", config_file(), "--server", server},
                                   {.stderr_path = log_file(), .search_path = false});
    if (!child) return false;
    pid = *child;
    return true;
  }

  int signal_and_wait(int sig) {
    if (pid <= 0) return -1;
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // The replica's own log lines since last time, indented under the story.
  void show_new_log(std::ostream& out) {
    std::ifstream in(log_file());
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
      if (n++ < log_lines_shown) continue;
      auto bracket = line.find(" [");  // drop the timestamp: the story has its own order
      out << "      " << (bracket == std::string::npos ? line : line.substr(bracket + 1)) << "\n";
    }
    log_lines_shown = n;
  }

  void read(Handled& h) const {
    for (const auto& path : {earlier_sink_file(), sink_file()}) {
      std::ifstream in(path);
      std::string line;
      while (std::getline(in, line)) {
        auto record = nlohmann::json::parse(line, nullptr, false);
        if (!record.is_object()) continue;
        ++h.times[record.value("data", std::string())];
        ++h.records;
        if (record.value("delivered", 1) > 1) ++h.redelivered;
      }
    }
  }
};

}  // namespace

int run_demo(const DemoOptions& options, std::ostream& out) {
  const auto started = Clock::now();
  auto say = [&](const std::string& text) { out << text << "\n" << std::flush; };

  say("natsfleet demo: two replicas of `natsfleet run` share work through a crash, a broker");
  say("restart and a consumer deleted by hand.");
  say("");
  say("1. Starting an embedded nats-server with JetStream.");
  broker::EmbeddedBroker broker;
  if (auto ok = broker.start(); !ok) {
    say("   cannot start the broker: " + ok.error().describe());
    return 1;
  }
  say("   listening on " + broker.url() + ", state in " + broker.state_dir());

  nats::ConnectOptions admin_options;
  admin_options.servers = {broker.url()};
  admin_options.name = "demo-publisher";
  admin_options.reconnect_wait_max = 200ms;
  auto admin = nats::Connection::open(admin_options, {});
  if (!admin || !wait_until([&] { return admin.value()->connected(); }, 10s)) {
    say("   cannot connect to the embedded broker");
    return 1;
  }
  nats::Connection& conn = *admin.value();
  nats::JetStreamApi api(conn, 2s);
  const nats::StreamConfig stream{.name = kStream, .subjects = {kSubject}};
  if (!wait_until([&] { return api.create_stream(stream).ok(); }, 10s)) {
    say("   cannot create stream DEMO");
    return 1;
  }
  say(std::string("   stream ") + kStream + " holds subject " + kSubject);

  say("");
  say("2. Starting replica-a and replica-b: `natsfleet run` with the same work '" +
      std::string(kWork) + "', each writing what it handles to its own file sink.");
  std::vector<Replica> replicas(2);
  replicas[0].name = "replica-a";
  replicas[1].name = "replica-b";
  for (auto& r : replicas) {
    r.dir = broker.state_dir();
    if (!r.spawn(options.self_executable, broker.url())) {
      say("   cannot start " + r.name);
      return 1;
    }
  }
  // Both replicas have a pull waiting on the shared consumer: both are in the fleet.
  bool both = wait_until(
      [&] {
        auto info = api.consumer_info(kStream, kWork);
        return info && info->num_waiting >= 2;
      },
      15s);
  for (auto& r : replicas) r.show_new_log(out);
  if (!both) {
    say("   the replicas did not bind in time");
    return 1;
  }

  say("");
  say("3. Publishing " + std::to_string(options.messages) +
      " jobs in bursts of 20, while things go wrong:");
  auto publish = [&](int first, int count) {
    for (int i = first; i < first + count; ++i) {
      const std::string payload = "job-" + std::to_string(i);
      // A JetStream publish is acked by the stream; while the broker is away it is retried.
      while (true) {
        auto ack = conn.request(kSubject, payload, 2s);
        if (ack && ack->status == 0 && ack->data.find("\"seq\"") != std::string::npos) break;
        std::this_thread::sleep_for(100ms);
      }
      if (i % 20 == 19) std::this_thread::sleep_for(20ms);
    }
  };
  auto handled_all = [&](int count) {
    Handled all;
    for (const auto& r : replicas) r.read(all);
    for (int i = 0; i < count; ++i)
      if (!all.times.count("job-" + std::to_string(i))) return false;
    return true;
  };
  const int n = options.messages;
  publish(0, n / 3);
  say("");
  say("4. After " + std::to_string(n / 3) +
      " jobs: replica-b hangs (SIGSTOP) while jobs keep coming, then is killed with SIGKILL.");
  say("   Whatever it was holding was never acked.");
  ::kill(replicas[1].pid, SIGSTOP);
  publish(n / 3, n / 6);
  replicas[1].signal_and_wait(SIGKILL);
  publish(n / 3 + n / 6, n / 3 - n / 6);
  say("");
  say("5. After " + std::to_string(2 * (n / 3)) +
      " jobs: killing the broker with SIGKILL, and starting it again a second later on the same "
      "port and store.");
  broker.kill();
  std::this_thread::sleep_for(1s);
  if (auto ok = broker.start(); !ok) {
    say("   cannot restart the broker: " + ok.error().describe());
    return 1;
  }
  publish(2 * (n / 3), n - 2 * (n / 3));
  replicas[0].show_new_log(out);
  say("   all " + std::to_string(n) +
      " jobs stored; waiting for replica-a to finish them, including replica-b's unacked work "
      "once its ack_wait (3s) runs out.");
  // Finished means finished on the broker: nothing pending, nothing awaiting an ack.
  const bool first_round = wait_until(
      [&] {
        auto info = api.consumer_info(kStream, kWork);
        return handled_all(n) && info && info->num_pending == 0 && info->num_ack_pending == 0;
      },
      60s);
  std::this_thread::sleep_for(1500ms);  // replica-a reads the ack floor every second
  Handled after_crashes;
  replicas[0].read(after_crashes);
  say(first_round ? "   done: replica-a took over " + std::to_string(after_crashes.redelivered) +
                        " redelivered messages."
                  : "   not everything was handled within a minute.");

  const int extra = std::max(n / 10, 10);
  say("");
  say("6. Deleting consumer '" + std::string(kWork) +
      "' by hand, as an operator might, then publishing " + std::to_string(extra) + " more jobs.");
  (void)api.delete_consumer(kStream, kWork);
  publish(n, extra);
  wait_until([&] { return handled_all(n + extra); }, 30s);
  std::this_thread::sleep_for(500ms);
  replicas[0].show_new_log(out);

  const int held = std::max(n / 20, 10);
  say("");
  say("7. replica-a's disk fills up: its sink file now points at /dev/full, so every write fails "
      "with ENOSPC. " +
      std::to_string(held) + " more jobs arrive.");
  say("   A full disk is not a bad message: the jobs are held, with no delivery used.");
  std::filesystem::rename(replicas[0].sink_file(), replicas[0].earlier_sink_file());
  std::filesystem::create_symlink("/dev/full", replicas[0].sink_file());
  std::this_thread::sleep_for(1500ms);  // the sink looks for a moved file once a second
  publish(n + extra, held);
  std::string readiness;
  wait_until(
      [&] {
        auto [status, body] = get_loopback(replicas[0].health_port, "/readyz");
        readiness = body;
        return status == 503 && readiness.find("downstream is down") != std::string::npos;
      },
      15s);
  replicas[0].show_new_log(out);
  while (!readiness.empty() && readiness.back() == '\n') readiness.pop_back();
  if (!readiness.empty()) say("   replica-a's /readyz answers 503: " + readiness);
  std::this_thread::sleep_for(3s);
  say("   Three seconds later the disk has room again.");
  std::filesystem::remove(replicas[0].sink_file());
  wait_until([&] { return handled_all(n + extra + held); }, 60s);
  std::this_thread::sleep_for(500ms);
  replicas[0].show_new_log(out);
  Handled after_disk;
  replicas[0].read(after_disk);

  say("");
  say("8. Stopping replica-a with SIGTERM.");
  const int exit_code = replicas[0].signal_and_wait(SIGTERM);
  replicas[0].show_new_log(out);
  say("   replica-a exited with " + std::to_string(exit_code) + ".");

  Handled a, b, all;
  replicas[0].read(a);
  replicas[1].read(b);
  for (const auto& r : replicas) r.read(all);
  const int published = n + extra + held;
  size_t lost = 0;
  for (int i = 0; i < published; ++i)
    if (!all.times.count("job-" + std::to_string(i))) ++lost;
  size_t by_both = 0;
  for (const auto& [payload, times] : a.times)
    if (b.times.count(payload)) ++by_both;
  const size_t repeated_before = after_crashes.records - after_crashes.times.size();
  const size_t replayed =
      (a.records - after_crashes.records) - static_cast<size_t>(extra) - static_cast<size_t>(held);

  say("");
  say("9. The account:");
  auto row = [&](const std::string& label, size_t value, const std::string& note = {}) {
    std::ostringstream line;
    line << "   " << std::left << std::setw(30) << label << std::right << std::setw(6) << value;
    if (!note.empty()) line << "   " << note;
    say(line.str());
  };
  row("published", static_cast<size_t>(published));
  row("handled by replica-a", a.records, "the survivor");
  row("handled by replica-b", b.records, "before it was killed");
  row("taken over by replica-a", after_crashes.redelivered,
      "redelivered after ack_wait: replica-b's unacked work");
  row("handled by both replicas", by_both, "replica-b died before its ack went out");
  row("repeated after the broker crash", repeated_before, "acks the killed broker had not stored");
  row("replayed after the recreate", replayed, "acked after the last ack floor replica-a saw");
  row("redelivered by the full disk", after_disk.redelivered - after_crashes.redelivered,
      "held by replica-a, not handed back");
  row("lost", lost);
  say("   Delivery is at-least-once: a crash may repeat a message, never drop one.");
  const auto took = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started);
  say("");
  say(lost == 0 ? "Nothing was lost. (" + std::to_string(took.count()) + " s)"
                : std::to_string(lost) + " jobs were lost: this is a bug.");
  admin.value()->shutdown(1s);
  broker.stop();
  return lost == 0 ? 0 : 1;
}

}  // namespace natsfleet::demo
