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
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
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

// The demo's story, one method per scene, in the order run() calls them. A scene that cannot set
// up what the next ones need says so and returns false.
class Story {
 public:
  Story(const DemoOptions& options, std::ostream& out)
      : options_(options), out_(out), n_(options.messages) {}

  int run() {
    const auto started = Clock::now();
    say("natsfleet demo: two replicas of `natsfleet run` share work through a crash, a broker");
    say("restart and a consumer deleted by hand.");
    if (!start_broker() || !start_replicas()) return 1;
    crash_a_replica();
    restart_the_broker();
    if (!broker_back_) return 1;
    delete_the_consumer();
    fill_the_disk();
    stop_the_survivor();
    const size_t lost = account();
    const auto took = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started);
    say("");
    say(lost == 0 ? "Nothing was lost. (" + std::to_string(took.count()) + " s)"
                  : std::to_string(lost) + " jobs were lost: this is a bug.");
    admin_->shutdown(1s);
    broker_.stop();
    return lost == 0 ? 0 : 1;
  }

 private:
  void say(const std::string& text) { out_ << text << "\n" << std::flush; }

  // 1. The broker, the publisher's connection, the stream.
  bool start_broker() {
    say("");
    say("1. Starting an embedded nats-server with JetStream.");
    if (auto ok = broker_.start(); !ok) {
      say("   cannot start the broker: " + ok.error().describe());
      return false;
    }
    say("   listening on " + broker_.url() + ", state in " + broker_.state_dir());
    nats::ConnectOptions admin_options;
    admin_options.servers = {broker_.url()};
    admin_options.name = "demo-publisher";
    admin_options.reconnect_wait_max = 200ms;
    auto admin = nats::Connection::open(admin_options, {});
    if (!admin || !wait_until([&] { return admin.value()->connected(); }, 10s)) {
      say("   cannot connect to the embedded broker");
      return false;
    }
    admin_ = std::move(admin.value());
    api_.emplace(*admin_, 2s);
    const nats::StreamConfig stream{.name = kStream, .subjects = {kSubject}};
    if (!wait_until([&] { return api_->create_stream(stream).ok(); }, 10s)) {
      say("   cannot create stream DEMO");
      return false;
    }
    say(std::string("   stream ") + kStream + " holds subject " + kSubject);
    return true;
  }

  // 2. Two `natsfleet run` replicas of the same work, both bound.
  bool start_replicas() {
    say("");
    say("2. Starting replica-a and replica-b: `natsfleet run` with the same work '" +
        std::string(kWork) + "', each writing what it handles to its own file sink.");
    replicas_[0].name = "replica-a";
    replicas_[1].name = "replica-b";
    for (auto& r : replicas_) {
      r.dir = broker_.state_dir();
      if (!r.spawn(options_.self_executable, broker_.url())) {
        say("   cannot start " + r.name);
        return false;
      }
    }
    // Both replicas have a pull waiting on the shared consumer: both are in the fleet.
    const bool both = wait_until(
        [&] {
          auto info = api_->consumer_info(kStream, kWork);
          return info && info->num_waiting >= 2;
        },
        15s);
    for (auto& r : replicas_) r.show_new_log(out_);
    if (!both) say("   the replicas did not bind in time");
    return both;
  }

  // 3 and 4. Jobs flow; replica-b hangs, then is killed with work in hand.
  void crash_a_replica() {
    say("");
    say("3. Publishing " + std::to_string(n_) + " jobs in bursts of 20, while things go wrong:");
    publish(0, n_ / 3);
    say("");
    say("4. After " + std::to_string(n_ / 3) +
        " jobs: replica-b hangs (SIGSTOP) while jobs keep coming, then is killed with SIGKILL.");
    say("   Whatever it was holding was never acked.");
    ::kill(replicas_[1].pid, SIGSTOP);
    publish(n_ / 3, n_ / 6);
    replicas_[1].signal_and_wait(SIGKILL);
    publish(n_ / 3 + n_ / 6, n_ / 3 - n_ / 6);
  }

  // 5. The broker killed and started again; replica-a finishes everything, replica-b's too.
  void restart_the_broker() {
    say("");
    say("5. After " + std::to_string(2 * (n_ / 3)) +
        " jobs: killing the broker with SIGKILL, and starting it again a second later on the "
        "same port and store.");
    broker_.kill();
    std::this_thread::sleep_for(1s);
    if (auto ok = broker_.start(); !ok) {
      say("   cannot restart the broker: " + ok.error().describe());
      return;
    }
    broker_back_ = true;
    publish(2 * (n_ / 3), n_ - 2 * (n_ / 3));
    replicas_[0].show_new_log(out_);
    say("   all " + std::to_string(n_) +
        " jobs stored; waiting for replica-a to finish them, including replica-b's unacked work "
        "once its ack_wait (3s) runs out.");
    // Finished means finished on the broker: nothing pending, nothing awaiting an ack.
    const bool finished = wait_until(
        [&] {
          auto info = api_->consumer_info(kStream, kWork);
          return handled_all(n_) && info && info->num_pending == 0 && info->num_ack_pending == 0;
        },
        60s);
    std::this_thread::sleep_for(1500ms);  // replica-a reads the ack floor every second
    replicas_[0].read(after_crashes_);
    say(finished ? "   done: replica-a took over " + std::to_string(after_crashes_.redelivered) +
                       " redelivered messages."
                 : "   not everything was handled within a minute.");
  }

  // 6. The consumer deleted by hand; replica-a makes it anew after its ack floor.
  void delete_the_consumer() {
    say("");
    say("6. Deleting consumer '" + std::string(kWork) +
        "' by hand, as an operator might, then publishing " + std::to_string(extra_) +
        " more jobs.");
    (void)api_->delete_consumer(kStream, kWork);
    publish(n_, extra_);
    wait_until([&] { return handled_all(n_ + extra_); }, 30s);
    std::this_thread::sleep_for(500ms);
    replicas_[0].show_new_log(out_);
  }

  // 7. replica-a's sink fails (ENOSPC): jobs are held, no delivery used, /readyz says why.
  void fill_the_disk() {
    say("");
    say("7. replica-a's disk fills up: its sink file now points at /dev/full, so every write "
        "fails with ENOSPC. " +
        std::to_string(held_) + " more jobs arrive.");
    say("   A full disk is not a bad message: the jobs are held, with no delivery used.");
    std::filesystem::rename(replicas_[0].sink_file(), replicas_[0].earlier_sink_file());
    std::filesystem::create_symlink("/dev/full", replicas_[0].sink_file());
    std::this_thread::sleep_for(1500ms);  // the sink looks for a moved file once a second
    publish(n_ + extra_, held_);
    std::string readiness;
    wait_until(
        [&] {
          auto [status, body] = get_loopback(replicas_[0].health_port, "/readyz");
          readiness = body;
          return status == 503 && readiness.find("downstream is down") != std::string::npos;
        },
        15s);
    replicas_[0].show_new_log(out_);
    while (!readiness.empty() && readiness.back() == '\n') readiness.pop_back();
    if (!readiness.empty()) say("   replica-a's /readyz answers 503: " + readiness);
    std::this_thread::sleep_for(3s);
    say("   Three seconds later the disk has room again.");
    std::filesystem::remove(replicas_[0].sink_file());
    wait_until([&] { return handled_all(n_ + extra_ + held_); }, 60s);
    std::this_thread::sleep_for(500ms);
    replicas_[0].show_new_log(out_);
    replicas_[0].read(after_disk_);
  }

  // 8. SIGTERM: replica-a drains and exits 0.
  void stop_the_survivor() {
    say("");
    say("8. Stopping replica-a with SIGTERM.");
    const int exit_code = replicas_[0].signal_and_wait(SIGTERM);
    replicas_[0].show_new_log(out_);
    say("   replica-a exited with " + std::to_string(exit_code) + ".");
  }

  // 9. What each replica handled, what was repeated and why, and what was lost (returned).
  size_t account() {
    Handled a, b, all;
    replicas_[0].read(a);
    replicas_[1].read(b);
    for (const auto& r : replicas_) r.read(all);
    const int published = n_ + extra_ + held_;
    size_t lost = 0;
    for (int i = 0; i < published; ++i)
      if (!all.times.count("job-" + std::to_string(i))) ++lost;
    size_t by_both = 0;
    for (const auto& [payload, times] : a.times)
      if (b.times.count(payload)) ++by_both;
    const size_t repeated_before = after_crashes_.records - after_crashes_.times.size();
    const size_t replayed = (a.records - after_crashes_.records) - static_cast<size_t>(extra_) -
                            static_cast<size_t>(held_);
    say("");
    say("9. The account:");
    row("published", static_cast<size_t>(published));
    row("handled by replica-a", a.records, "the survivor");
    row("handled by replica-b", b.records, "before it was killed");
    row("taken over by replica-a", after_crashes_.redelivered,
        "redelivered after ack_wait: replica-b's unacked work");
    row("handled by both replicas", by_both, "replica-b died before its ack went out");
    row("repeated after the broker crash", repeated_before,
        "acks the killed broker had not stored");
    row("replayed after the recreate", replayed, "acked after the last ack floor replica-a saw");
    row("redelivered by the full disk", after_disk_.redelivered - after_crashes_.redelivered,
        "held by replica-a, not handed back");
    row("lost", lost);
    say("   Delivery is at-least-once: a crash may repeat a message, never drop one.");
    return lost;
  }

  void row(const std::string& label, size_t value, const std::string& note = {}) {
    std::ostringstream line;
    line << "   " << std::left << std::setw(30) << label << std::right << std::setw(6) << value;
    if (!note.empty()) line << "   " << note;
    say(line.str());
  }

  // Publishes job-<first> .. job-<first + count - 1>, each until the stream has stored it (a
  // publish while the broker is away is retried), in bursts of 20.
  void publish(int first, int count) {
    for (int i = first; i < first + count; ++i) {
      const std::string payload = "job-" + std::to_string(i);
      while (true) {
        auto ack = admin_->request(kSubject, payload, 2s);
        if (ack && ack->status == 0 && ack->data.find("\"seq\"") != std::string::npos) break;
        std::this_thread::sleep_for(100ms);
      }
      if (i % 20 == 19) std::this_thread::sleep_for(20ms);
    }
  }

  // job-0 .. job-<count - 1> are each in some replica's sink file.
  bool handled_all(int count) const {
    Handled all;
    for (const auto& r : replicas_) r.read(all);
    for (int i = 0; i < count; ++i)
      if (!all.times.count("job-" + std::to_string(i))) return false;
    return true;
  }

  const DemoOptions& options_;
  std::ostream& out_;
  const int n_;
  const int extra_ = std::max(n_ / 10, 10);  // published after the consumer is deleted
  const int held_ = std::max(n_ / 20, 10);   // published while the disk is full
  broker::EmbeddedBroker broker_;
  bool broker_back_ = false;
  std::unique_ptr<nats::Connection> admin_;
  std::optional<nats::JetStreamApi> api_;
  std::vector<Replica> replicas_ = std::vector<Replica>(2);
  Handled after_crashes_;
  Handled after_disk_;
};

}  // namespace

int run_demo(const DemoOptions& options, std::ostream& out) { return Story(options, out).run(); }

}  // namespace natsfleet::demo
