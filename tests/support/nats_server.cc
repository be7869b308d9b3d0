#include "support/nats_server.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

#include "base/child_process.h"

namespace natsfleet::testing {
namespace {

#ifdef NATSFLEET_NATS_SERVER
constexpr const char* kServerBinary = NATSFLEET_NATS_SERVER;
#else
constexpr const char* kServerBinary = "nats-server";
#endif

constexpr const char* kClusterName = "fleet";
constexpr const char* kLoopback = "127.0.0.1";
// Start-up is retried with fresh ports when another process grabbed one of ours between probing
// and the server binding it; a real configuration error fails on every attempt anyway.
constexpr int kMaxStartAttempts = 3;
// How long a cluster's meta group may take to take in every node once they all answer.
constexpr std::chrono::milliseconds kMetaGroupTimeout{10'000};
// A single probe of a healthy local server answers in milliseconds; a paused or wedged one must
// not eat the whole readiness budget in one request.
constexpr std::chrono::milliseconds kProbeTimeout{500};
constexpr std::chrono::milliseconds kPauseTimeout{5'000};

std::atomic<int> next_server_number{1};

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string make_temp_dir() {
  auto dir = broker::make_temp_directory("natsfleet-test-");
  if (!dir) throw std::runtime_error(dir.error().describe());
  return dir.value();
}

void remove_tree(const std::string& path) noexcept {
  if (path.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const auto& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

// Returns the index just past the JSON string that opens at `json[quote]`. Escapes are copied
// verbatim rather than decoded: only server names are read, and those never contain any.
size_t read_json_string(const std::string& json, size_t quote, std::string* out) {
  size_t i = quote + 1;
  std::string value;
  while (i < json.size() && json[i] != '"') {
    if (json[i] == '\\' && i + 1 < json.size()) value += json[i++];
    value += json[i++];
  }
  if (out != nullptr) *out = std::move(value);
  return std::min(i + 1, json.size());
}

size_t skip_space(const std::string& json, size_t i) {
  while (i < json.size() && std::isspace(static_cast<unsigned char>(json[i])) != 0) ++i;
  return i;
}

}  // namespace

std::vector<int> free_loopback_ports(size_t count) {
  auto ports = broker::free_loopback_ports(count);
  if (ports.size() != count) throw std::runtime_error(errno_text("free loopback ports"));
  return ports;
}

int free_loopback_port() { return free_loopback_ports(1).front(); }

std::string jsz_meta_leader(const std::string& jsz_body) {
  size_t key = jsz_body.find("\"meta_cluster\"");
  if (key == std::string::npos) return {};
  size_t i = jsz_body.find('{', key);
  if (i == std::string::npos) return {};
  // Only keys directly in the meta_cluster object count; nested replica objects are skipped.
  int depth = 0;
  while (i < jsz_body.size()) {
    char c = jsz_body[i];
    if (c == '{' || c == '[') {
      ++depth;
      ++i;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return {};
      ++i;
    } else if (c == '"') {
      std::string token;
      i = read_json_string(jsz_body, i, &token);
      size_t after = skip_space(jsz_body, i);
      if (depth == 1 && token == "leader" && after < jsz_body.size() && jsz_body[after] == ':') {
        size_t value = skip_space(jsz_body, after + 1);
        if (value >= jsz_body.size() || jsz_body[value] != '"') return {};
        std::string leader;
        read_json_string(jsz_body, value, &leader);
        return leader;
      }
    } else {
      ++i;
    }
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// NatsServer

NatsServer::NatsServer(NatsServerOptions options) : options_(std::move(options)) {
  if (options_.server_name.empty()) {
    options_.server_name = "n" + std::to_string(next_server_number.fetch_add(1));
  }
  dir_ = make_temp_dir();
  try {
    for (int attempt = 1;; ++attempt) {
      std::vector<int> ports = free_loopback_ports(2);
      if (options_.port > 0) ports[0] = options_.port;
      ports_ = Ports{ports[0], ports[1], -1};
      spawn();
      std::string error;
      StartOutcome outcome = wait_ready_for(kServerReadyTimeout, &error);
      if (outcome == StartOutcome::ready) return;
      kill_and_reap();
      if (outcome != StartOutcome::port_in_use || attempt == kMaxStartAttempts) {
        throw std::runtime_error(error);
      }
      // A fresh log keeps the next attempt's port-conflict detection honest.
      std::error_code ignored;
      std::filesystem::remove(dir_ + "/nats.log", ignored);
    }
  } catch (...) {
    kill_and_reap();
    remove_tree(dir_);
    throw;
  }
}

NatsServer::NatsServer(NatsServerOptions options, Ports ports, ClusterSettings cluster)
    : options_(std::move(options)), ports_(ports), cluster_(std::move(cluster)) {
  dir_ = make_temp_dir();
}

NatsServer::~NatsServer() {
  kill_and_reap();
  remove_tree(dir_);
}

std::string NatsServer::url() const {
  return std::string("nats://") + kLoopback + ":" + std::to_string(ports_.client);
}
int NatsServer::port() const { return ports_.client; }
int NatsServer::monitor_port() const { return ports_.monitor; }
int NatsServer::cluster_port() const { return ports_.cluster; }
std::string NatsServer::store_dir() const { return dir_ + "/store"; }
std::string NatsServer::dir() const { return dir_; }
std::string NatsServer::name() const { return options_.server_name; }
pid_t NatsServer::pid() const { return running() ? process_.pid() : -1; }
bool NatsServer::running() const { return process_.running(); }
bool NatsServer::paused() const { return running() && paused_; }

void NatsServer::write_config() const {
  std::ostringstream config;
  config << "# Generated by the natsfleet test fixture.\n"
         << "server_name: \"" << options_.server_name << "\"\n"
         << "listen: " << kLoopback << ":" << ports_.client << "\n"
         << "http: " << kLoopback << ":" << ports_.monitor << "\n"
         << "log_file: \"" << dir_ << "/nats.log\"\n";
  if (options_.jetstream) {
    config << "jetstream {\n"
           << "  store_dir: \"" << store_dir() << "\"\n"
           << "  max_memory_store: 256MB\n"
           << "  max_file_store: 2GB\n"
           << "}\n";
  }
  if (!cluster_.name.empty()) {
    config << "cluster {\n"
           << "  name: " << cluster_.name << "\n"
           << "  listen: " << kLoopback << ":" << ports_.cluster << "\n"
           << (cluster_.no_advertise ? "  no_advertise: true\n" : "") << "  routes: [\n";
    for (int route_port : cluster_.route_ports) {
      config << "    nats-route://" << kLoopback << ":" << route_port << "\n";
    }
    config << "  ]\n}\n";
  }
  config << options_.extra_config << "\n";

  const std::string path = dir_ + "/nats.conf";
  std::ofstream out(path, std::ios::trunc);
  out << config.str();
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
}

void NatsServer::spawn() {
  write_config();
  broker::NatsServerCommand command;
  command.executable = kServerBinary;
  command.args = {"-c", dir_ + "/nats.conf"};
  command.log_file = dir_ + "/nats.log";
  if (auto spawned = process_.spawn(command); !spawned)
    throw std::runtime_error(spawned.error().describe());
  paused_ = false;
}

NatsServer::StartOutcome NatsServer::wait_ready_for(std::chrono::milliseconds timeout,
                                                    std::string* error) const {
  int status = -1;
  std::string body;
  std::string leader_note;
  const bool needs_meta_leader = options_.jetstream && !cluster_.name.empty();
  auto ready = process_.wait_ready(
      [&] {
        body = http_get(ports_.monitor, "/healthz", &status, kProbeTimeout);
        if (status != 200) return false;
        if (!needs_meta_leader) return true;
        // /healthz already waits for the meta leader in 2.9; checking /jsz too keeps readiness
        // meaning "JetStream requests will be served" should a later server relax /healthz.
        int jsz_status = -1;
        std::string jsz = http_get(ports_.monitor, "/jsz", &jsz_status, kProbeTimeout);
        if (jsz_status == 200 && !jsz_meta_leader(jsz).empty()) return true;
        leader_note = " (but /jsz names no meta leader yet)";
        return false;
      },
      timeout);

  const std::string who = "nats-server " + options_.server_name + " (client port " +
                          std::to_string(ports_.client) + ", monitor port " +
                          std::to_string(ports_.monitor) + ", dir " + dir_ + ")";
  if (const auto how = process_.exit_description()) {
    std::string tail = log_tail();
    if (error != nullptr) {
      *error = who + " exited during start-up (" + *how + "); log tail:\n" + tail;
    }
    return tail.find("address already in use") != std::string::npos ? StartOutcome::port_in_use
                                                                    : StartOutcome::failed;
  }
  if (ready.ok()) return StartOutcome::ready;
  if (error != nullptr) {
    *error = who + " not ready within " + std::to_string(timeout.count()) +
             " ms; last /healthz: " + (status < 0 ? "no answer" : std::to_string(status)) + " " +
             body + leader_note + "\nlog tail:\n" + log_tail();
  }
  return StartOutcome::failed;
}

void NatsServer::wait_ready(std::chrono::milliseconds timeout) const {
  std::string error;
  if (wait_ready_for(timeout, &error) != StartOutcome::ready) throw std::runtime_error(error);
}

void NatsServer::kill_and_reap() noexcept {
  process_.kill();
  paused_ = false;
}

void NatsServer::stop() {
  process_.stop(kGracefulStopTimeout);
  paused_ = false;
}

void NatsServer::kill() { kill_and_reap(); }

void NatsServer::reload(std::string extra_config) {
  if (!running()) throw std::logic_error("reload: nats-server " + name() + " is not running");
  const auto reloads = [&] {
    std::ifstream log(dir_ + "/nats.log");
    size_t count = 0;
    for (std::string line; std::getline(log, line);)
      if (line.find("Reloaded server configuration") != std::string::npos) ++count;
    return count;
  };
  const size_t before = reloads();
  options_.extra_config = std::move(extra_config);
  write_config();
  if (!process_.signal(SIGHUP)) throw std::runtime_error(errno_text("kill SIGHUP"));
  if (!wait_for([&] { return reloads() > before; }, kPauseTimeout))
    throw std::runtime_error("reload: nats-server " + name() + " did not reload:\n" + log_tail());
}

void NatsServer::pause() {
  if (!running()) throw std::logic_error("pause: nats-server " + name() + " is not running");
  if (!process_.signal(SIGSTOP)) throw std::runtime_error(errno_text("kill SIGSTOP"));
  paused_ = true;
  // Callers expect the broker to be frozen when pause() returns. Reading the state from /proc
  // avoids consuming wait notifications.
  if (!wait_stopped(process_.pid(), kPauseTimeout))
    throw std::runtime_error("pause: nats-server " + name() + " did not stop");
}

void NatsServer::resume() {
  if (running()) process_.signal(SIGCONT);
  paused_ = false;
}

void NatsServer::restart_without_waiting() {
  stop();
  spawn();
}

void NatsServer::restart() {
  restart_without_waiting();
  // A cluster member restarted after a kill catches its streams up before /healthz says ready,
  // which takes longer than a first start on a loaded machine: the cluster's bound, not a node's.
  wait_ready(kClusterReadyTimeout);
}

void NatsServer::restart_wiped() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(store_dir(), ec);
  if (ec) throw std::runtime_error("cannot delete " + store_dir() + ": " + ec.message());
  restart();
}

std::string NatsServer::log_tail(size_t lines) const { return process_.log_tail(lines); }

// ---------------------------------------------------------------------------------------------
// NatsCluster

NatsCluster::NatsCluster(const NatsClusterOptions& cluster_options) {
  const int size = cluster_options.size;
  if (size < 1) throw std::invalid_argument("NatsCluster size must be at least 1");
  const auto count = static_cast<size_t>(size);
  for (int attempt = 1;; ++attempt) {
    nodes_.clear();
    // Every node's route port goes into every other node's config, so all ports are picked up
    // front, distinct from each other.
    std::vector<int> ports = free_loopback_ports(3 * count);
    for (size_t i = 0; i < count; ++i) {
      NatsServer::ClusterSettings cluster{kClusterName, {}, cluster_options.no_advertise};
      for (size_t j = 0; j < count; ++j) {
        if (j == i) continue;
        const int route_port = ports[3 * j + 2];
        cluster.route_ports.push_back(
            cluster_options.route_via
                ? cluster_options.route_via(static_cast<int>(i), static_cast<int>(j), route_port)
                : route_port);
      }
      NatsServerOptions options;
      options.server_name = "n" + std::to_string(i + 1);
      options.extra_config = cluster_options.extra_config;
      NatsServer::Ports node_ports{ports[3 * i], ports[3 * i + 1], ports[3 * i + 2]};
      // The constructor is private to NatsServer, so make_unique cannot reach it.
      nodes_.push_back(std::unique_ptr<NatsServer>(
          new NatsServer(std::move(options), node_ports, std::move(cluster))));
    }
    for (auto& node : nodes_) node->spawn();

    // One shared deadline, and give up at once when any node dies: no point waiting 20 s for a
    // quorum that can no longer form.
    bool all_ready = false;
    wait_for(
        [&] {
          all_ready = true;
          for (const auto& node : nodes_) {
            if (!node->running()) {
              all_ready = false;
              return true;
            }
            if (all_ready && node->wait_ready_for(std::chrono::milliseconds(0), nullptr) !=
                                 NatsServer::StartOutcome::ready) {
              all_ready = false;
            }
          }
          return all_ready;
        },
        cluster_options.ready_timeout, std::chrono::milliseconds(50));

    std::vector<std::string> errors;
    bool port_conflict = false;
    // Once every node was ready, a node's health is not asked again: a new meta leader's
    // followers answer "not current" for a moment after it is elected.
    for (const auto& node : nodes_) {
      if (all_ready) break;
      std::string error;
      NatsServer::StartOutcome outcome = node->wait_ready_for(std::chrono::milliseconds(0), &error);
      if (outcome == NatsServer::StartOutcome::ready) continue;
      port_conflict = port_conflict || outcome == NatsServer::StartOutcome::port_in_use;
      errors.push_back(std::move(error));
    }
    if (errors.empty()) {
      // Every node answering is not enough: nats-server 2.10 can form its meta group from the
      // first nodes up and leave a later one out for good (seen: cluster_size 2 of 3 for over a
      // minute, so no R3 stream could be placed). Such a start is made again from scratch.
      int members = -1;
      const bool whole = wait_for(
          [&] {
            members = meta_group_size();
            return members < 0 || members == size;
          },
          kMetaGroupTimeout, std::chrono::milliseconds(100));
      if (whole) return;
      if (attempt == kMaxStartAttempts)
        throw std::runtime_error("NatsCluster(" + std::to_string(size) +
                                 ") formed a meta group of " + std::to_string(members) +
                                 " nodes, " + std::to_string(kMaxStartAttempts) + " times");
      continue;
    }
    // Every node still running, yet not all ready after the whole wait: a start that stuck.
    // nats-server 2.10 can lose its first elections to duplicate-route races and never elect,
    // or elect and leave a node "not current with the meta leader" for good. Such a start is
    // made again from scratch, as a port conflict is; a node that exited is a real error.
    const bool all_running =
        std::all_of(nodes_.begin(), nodes_.end(), [](const auto& node) { return node->running(); });
    if (!(port_conflict || all_running) || attempt == kMaxStartAttempts) {
      throw std::runtime_error("NatsCluster(" + std::to_string(size) + ") did not form within " +
                               std::to_string(cluster_options.ready_timeout.count()) + " ms, " +
                               std::to_string(attempt) + " start(s):\n" + join(errors, "\n\n"));
    }
  }
}

NatsServer& NatsCluster::node(int i) {
  if (i < 0 || i >= size()) throw std::out_of_range("NatsCluster::node " + std::to_string(i));
  return *nodes_[static_cast<size_t>(i)];
}

const NatsServer& NatsCluster::node(int i) const {
  if (i < 0 || i >= size()) throw std::out_of_range("NatsCluster::node " + std::to_string(i));
  return *nodes_[static_cast<size_t>(i)];
}

int NatsCluster::size() const { return static_cast<int>(nodes_.size()); }

std::vector<std::string> NatsCluster::urls() const {
  std::vector<std::string> out;
  out.reserve(nodes_.size());
  for (const auto& node : nodes_) out.push_back(node->url());
  return out;
}

std::string NatsCluster::joined_urls() const { return join(urls(), ","); }

NatsServer* NatsCluster::find(const std::string& server_name) {
  for (auto& node : nodes_) {
    if (node->name() == server_name) return node.get();
  }
  return nullptr;
}

std::string NatsCluster::meta_leader() const {
  for (const auto& node : nodes_) {
    if (!node->running() || node->paused()) continue;
    int status = -1;
    std::string jsz = http_get(node->monitor_port(), "/jsz", &status, kProbeTimeout);
    if (status == 200) return jsz_meta_leader(jsz);
  }
  return {};
}

int NatsCluster::meta_group_size() const {
  const std::string leader = meta_leader();
  for (const auto& node : nodes_) {
    if (node->name() != leader || !node->running() || node->paused()) continue;
    int status = -1;
    const std::string jsz = http_get(node->monitor_port(), "/jsz", &status, kProbeTimeout);
    const size_t key = jsz.find("\"cluster_size\":");
    if (status != 200 || key == std::string::npos) return -1;  // 2.9 does not say
    return std::atoi(jsz.c_str() + key + std::strlen("\"cluster_size\":"));
  }
  return 0;  // no leader yet
}

void NatsCluster::wait_ready(std::chrono::milliseconds timeout) const {
  wait_for(
      [&] {
        for (const auto& node : nodes_) {
          if (!node->running() || node->paused()) continue;
          if (node->wait_ready_for(std::chrono::milliseconds(0), nullptr) !=
              NatsServer::StartOutcome::ready) {
            return false;
          }
        }
        return true;
      },
      timeout, std::chrono::milliseconds(50));
  std::vector<std::string> errors;
  for (const auto& node : nodes_) {
    if (!node->running() || node->paused()) continue;
    std::string error;
    if (node->wait_ready_for(std::chrono::milliseconds(0), &error) !=
        NatsServer::StartOutcome::ready) {
      errors.push_back(std::move(error));
    }
  }
  if (!errors.empty()) {
    throw std::runtime_error("NatsCluster not ready within " + std::to_string(timeout.count()) +
                             " ms:\n" + join(errors, "\n\n"));
  }
}

namespace {

std::set<int> tcp_ports_held_by(pid_t pid) {
  namespace fs = std::filesystem;
  std::set<std::string> inodes;  // "socket:[12345]" -> "12345"
  std::error_code ec;
  for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    const std::string target = fs::read_symlink(fd.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::set<int> ports;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (!inodes.count(inode)) continue;
      ports.insert(std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16));
    }
  }
  return ports;
}

}  // namespace

std::set<int> tcp_ports_a_child_inherits() {
  // Spawned as the daemon spawns a worker sink: the same helper, the same defaults.
  auto child = base::ChildProcess::start({"/bin/sleep", "30"});
  if (!child) throw std::runtime_error(child.error().describe());
  return tcp_ports_held_by(child->pid());  // the child is killed and reaped when it goes
}

std::pair<int, int> nats_server_version() {
  static const std::pair<int, int> version = [] {
    std::pair<int, int> v{0, 0};
    FILE* pipe = ::popen((std::string(kServerBinary) + " --version 2>/dev/null").c_str(), "r");
    if (!pipe) return v;
    char buf[128] = {};
    const size_t n = std::fread(buf, 1, sizeof buf - 1, pipe);
    ::pclose(pipe);
    const std::string text(buf, n);  // "nats-server: v2.10.27"
    if (const auto at = text.find(" v"); at != std::string::npos)
      std::sscanf(text.c_str() + at + 2, "%d.%d", &v.first, &v.second);
    return v;
  }();
  return version;
}

}  // namespace natsfleet::testing
