#include "demo/fleet_demo.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <iomanip>
#include <map>
#include <mutex>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "broker/embedded_broker.h"
#include "nats/connection.h"
#include "nats/jetstream_api.h"
#include "natsfleet/fleet.h"

extern char** environ;

namespace natsfleet::demo {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kStream = "DEMO";
constexpr const char* kSubject = "demo.jobs";
constexpr const char* kWork = "demo-worker";

std::atomic<bool> replica_stop{false};

template <typename F>
bool wait_until(F&& done, std::chrono::milliseconds timeout) {
  const auto until = Clock::now() + timeout;
  while (Clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

// One replica process and what it recorded.
struct Replica {
  std::string name;
  std::string record_file;
  std::string log_file;
  pid_t pid = -1;
  size_t log_lines_shown = 0;

  bool spawn(const std::string& self, const std::string& server) {
    std::vector<std::string> args = {self, "demo", "--replica", name, "--server", server,
                                     "--out", record_file};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, log_file.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    return rc == 0;
  }

  void signal_and_wait(int sig) {
    if (pid <= 0) return;
    ::kill(pid, sig);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }

  // The replica's state changes since last time, indented under the story.
  void show_new_log(std::ostream& out) {
    std::ifstream in(log_file);
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
      if (n++ < log_lines_shown) continue;
      // Drop the timestamp: the story has its own order.
      auto bracket = line.find(" [");
      out << "      " << name << " | " << (bracket == std::string::npos ? line : line.substr(bracket + 1))
          << "\n";
    }
    log_lines_shown = n;
  }

  // payload -> times handled, and how many of those were redeliveries.
  void read(std::map<std::string, int>& handled, size_t& lines, size_t& redelivered) const {
    std::ifstream in(record_file);
    std::string payload;
    uint64_t delivered = 0;
    while (in >> payload >> delivered) {
      ++handled[payload];
      ++lines;
      if (delivered > 1) ++redelivered;
    }
  }
};

}  // namespace

int run_demo_replica(const std::string& name, const std::string& server,
                     const std::string& record_file) {
  signal(SIGTERM, [](int) { replica_stop = true; });
  signal(SIGINT, [](int) { replica_stop = true; });
  std::ofstream record(record_file, std::ios::app);
  std::mutex mu;
  FleetOptions options;
  options.name = name;
  options.servers = {server};
  options.reconnect_wait_max = 500ms;
  options.info_interval = 1s;
  Fleet fleet(options);
  WorkSpec spec{.name = kWork, .subject = kSubject};
  spec.ack_wait = 3s;
  spec.heartbeat = 1s;
  spec.concurrency = 4;
  auto added = fleet.add_work(spec, [&](const Message& m) {
    std::this_thread::sleep_for(2ms);  // the "work"
    std::lock_guard lock(mu);
    record << m.data() << ' ' << m.delivered() << '\n';
    record.flush();
    return Disposition::ack();
  });
  std::atomic<bool> fatal{false};
  fleet.on_fatal([&](const FatalReport&) { fatal = true; });
  if (!added || !fleet.start()) return 2;
  while (!replica_stop && !fatal) std::this_thread::sleep_for(50ms);
  fleet.shutdown(5s);
  return fatal ? 70 : 0;
}

int run_demo(const DemoOptions& options, std::ostream& out) {
  const auto started = Clock::now();
  auto say = [&](const std::string& text) { out << text << "\n" << std::flush; };

  say("natsfleet demo: work shared by two replicas, through a crash and a broker restart.");
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
  nlohmann::json stream = {{"name", kStream}, {"subjects", {kSubject}}, {"storage", "file"}};
  if (!wait_until([&] { return api.create_stream(stream).ok(); }, 10s)) {
    say("   cannot create stream DEMO");
    return 1;
  }
  say(std::string("   stream ") + kStream + " holds subject " + kSubject);

  say("");
  say("2. Starting two replicas of one service, each its own process, both declaring work '" +
      std::string(kWork) + "'.");
  std::vector<Replica> replicas(2);
  replicas[0].name = "replica-a";
  replicas[1].name = "replica-b";
  for (auto& r : replicas) {
    r.record_file = broker.state_dir() + "/" + r.name + ".handled";
    r.log_file = broker.state_dir() + "/" + r.name + ".log";
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
      " jobs, one every millisecond or so, while things go wrong:");
  const int kill_at = options.messages / 3;
  const int restart_at = 2 * options.messages / 3;
  for (int i = 0; i < options.messages; ++i) {
    if (i == kill_at) {
      say("");
      say("4. Killing replica-b with SIGKILL after " + std::to_string(i) +
          " jobs: whatever it had in flight was never acked.");
      replicas[1].signal_and_wait(SIGKILL);
    }
    if (i == restart_at) {
      say("");
      say("5. Killing the broker and starting it again on the same port and store.");
      broker.kill();
      std::this_thread::sleep_for(1s);
      if (auto ok = broker.start(); !ok) {
        say("   cannot restart the broker: " + ok.error().describe());
        return 1;
      }
      say("   broker back on " + broker.url());
    }
    const std::string payload = "job-" + std::to_string(i);
    // A JetStream publish is acked by the stream; during the restart it is retried.
    while (true) {
      auto ack = conn.request(kSubject, payload, 2s);
      if (ack && ack->status == 0 && ack->data.find("\"seq\"") != std::string::npos) break;
      std::this_thread::sleep_for(100ms);
    }
    std::this_thread::sleep_for(1ms);
  }
  say("   all " + std::to_string(options.messages) + " jobs published and stored.");

  say("");
  say("6. Waiting for the survivor to finish, including replica-b's unacked work once its "
      "ack_wait (3s) ran out.");
  std::map<std::string, int> handled;
  auto tally = [&] {
    handled.clear();
    size_t lines = 0, redelivered = 0;
    for (const auto& r : replicas) r.read(handled, lines, redelivered);
    return handled.size() >= static_cast<size_t>(options.messages);
  };
  wait_until(tally, 60s);
  std::this_thread::sleep_for(500ms);
  tally();
  replicas[0].signal_and_wait(SIGTERM);
  say("   what the replicas logged along the way:");
  for (auto& r : replicas) r.show_new_log(out);

  std::map<std::string, int> by_a, by_b;
  size_t lines_a = 0, lines_b = 0, redelivered_a = 0, redelivered_b = 0;
  replicas[0].read(by_a, lines_a, redelivered_a);
  replicas[1].read(by_b, lines_b, redelivered_b);
  size_t lost = 0;
  for (int i = 0; i < options.messages; ++i)
    if (!handled.count("job-" + std::to_string(i))) ++lost;
  size_t by_both = 0, twice_by_a = 0;
  for (const auto& [payload, n] : by_a) {
    if (by_b.count(payload)) ++by_both;
    if (n > 1) ++twice_by_a;
  }

  say("");
  say("7. The account:");
  auto row = [&](const std::string& label, size_t value, const std::string& note = {}) {
    std::ostringstream line;
    line << "   " << std::left << std::setw(34) << label << std::right << std::setw(6) << value;
    if (!note.empty()) line << "   " << note;
    say(line.str());
  };
  row("published", static_cast<size_t>(options.messages));
  row("handled by replica-a", lines_a, "the survivor");
  row("handled by replica-b", lines_b, "before it was killed");
  row("taken over from replica-b", redelivered_a,
      "redelivered to replica-a after ack_wait");
  row("handled by both replicas", by_both, "replica-b died before its ack went out");
  row("handled twice by replica-a", twice_by_a,
      "acks lost in the broker's SIGKILL; JetStream redelivers");
  row("lost", lost);
  say("   (at-least-once: a crash can repeat a message, never drop one; handlers must be "
      "idempotent)");
  const auto took = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started);
  say("");
  say(lost == 0 ? "Nothing was lost. (" + std::to_string(took.count()) + " s)"
                : std::to_string(lost) + " jobs were lost: this is a bug.");
  admin.value()->shutdown(1s);
  broker.stop();
  return lost == 0 ? 0 : 1;
}

}  // namespace natsfleet::demo
