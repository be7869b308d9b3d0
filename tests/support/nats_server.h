// Real nats-server brokers for integration tests: one server or a routed JetStream cluster on
// free loopback ports, each node in its own temp dir, torn down by RAII so that a failing test
// never leaks a process, a port or a store.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "broker/nats_server_process.h"
#include "support/http_client.h"
#include "support/wait_for.h"

namespace natsfleet::testing {

// Generous enough for a loaded CI machine running tests in parallel; a healthy server on an idle
// machine is ready in well under a second.
inline constexpr std::chrono::milliseconds kServerReadyTimeout{10'000};
// Cluster formation needs routes to connect and a meta leader election on top of start-up.
inline constexpr std::chrono::milliseconds kClusterReadyTimeout{20'000};
// After SIGTERM, how long a server may take to shut down before it gets SIGKILL.
inline constexpr std::chrono::milliseconds kGracefulStopTimeout{5'000};

struct NatsServerOptions {
  bool jetstream = true;
  std::string extra_config;  // appended verbatim to the generated config file
  std::string server_name;   // default: generated ("n1"...)
  int port = 0;              // client port; 0: a free one (set it to start a broker a client
                             // is already trying to reach)
};

// One nats-server child process, launched by the daemon's own launcher
// (broker::NatsServerProcess) from a generated config file. Not thread-safe: drive it from the
// test's main thread.
class NatsServer {
 public:
  // Starts the server and waits until /healthz answers 200. Throws std::runtime_error (carrying
  // the tail of the server log) if it does not become ready within kServerReadyTimeout.
  explicit NatsServer(NatsServerOptions options = {});
  ~NatsServer();
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  std::string url() const;  // "nats://127.0.0.1:<port>"
  int port() const;
  int monitor_port() const;       // http monitoring port
  int cluster_port() const;       // route listen port, -1 unless this is a cluster node
  std::string store_dir() const;  // JetStream store_dir (nats-server adds "jetstream/" below it)
  std::string dir() const;        // the fixture's temp dir (config, log, store)
  std::string name() const;
  pid_t pid() const;  // -1 when not running
  bool running() const;
  bool paused() const;

  void stop();     // SIGTERM, wait for exit (SIGKILL after kGracefulStopTimeout)
  void kill();     // SIGKILL, wait for exit
  void pause();    // SIGSTOP; returns once the process is actually stopped
  void resume();   // SIGCONT
  void restart();  // start again on the same ports and store (stops first if running), wait ready
  void restart_wiped();  // stop if running, delete the store, start on the same ports, wait ready
  // Rewrites the config with `extra_config` in place of the options' and has the running server
  // reload it (SIGHUP); returns once its log says it did. Connected clients keep their
  // connections and get the new permissions.
  void reload(std::string extra_config);

  // Starts the process without waiting: a cluster node restarted while its peers are down cannot
  // become healthy alone (no quorum), so the caller restarts several and then waits on them.
  void restart_without_waiting();
  // Throws std::runtime_error with the log tail unless /healthz answers 200 (and, for a cluster
  // node, /jsz names a meta leader) within `timeout`. Fails fast if the process exits.
  void wait_ready(std::chrono::milliseconds timeout = kServerReadyTimeout) const;

  std::string log_tail(size_t lines = 40) const;  // last lines of the server's log file

 private:
  friend class NatsCluster;

  struct Ports {
    int client = -1;
    int monitor = -1;
    int cluster = -1;
  };
  struct ClusterSettings {
    std::string name;  // empty: not clustered
    std::vector<int> route_ports;
    bool no_advertise = false;
  };
  enum class StartOutcome { ready, port_in_use, failed };

  // Used by NatsCluster: every node's route port must be known before any node starts, so nodes
  // are built with their cluster settings and started separately.
  NatsServer(NatsServerOptions options, Ports ports, ClusterSettings cluster);

  void write_config() const;
  void spawn();
  StartOutcome wait_ready_for(std::chrono::milliseconds timeout, std::string* error) const;
  void kill_and_reap() noexcept;

  NatsServerOptions options_;
  Ports ports_;
  ClusterSettings cluster_;
  std::string dir_;
  broker::NatsServerProcess process_;
  bool paused_ = false;
};

struct NatsClusterOptions {
  int size = 3;
  // The port node `from` dials to reach node `to`, whose route listener is `route_port` (both
  // 0-based). Default: the route port itself. A test puts a proxy there to cut or slow a route.
  std::function<int(int from, int to, int route_port)> route_via;
  // Servers do not tell clients about each other's client ports, so a client only ever uses the
  // URLs it was given (a proxy in front of each node stays in the path).
  bool no_advertise = false;
  std::string extra_config;  // appended to every node's config (subject mappings, say)
  // How long one start may take to make every node ready before it is made again.
  std::chrono::milliseconds ready_timeout = kClusterReadyTimeout;
};

// A full-mesh routed JetStream cluster (cluster name "fleet", servers "n1".."n<size>").
class NatsCluster {
 public:
  // Starts all nodes and waits (up to options.ready_timeout) until every node is healthy and knows
  // the JetStream meta leader; a start that stuck with every node running is made again (up to 3
  // starts). Throws std::runtime_error with the nodes' log tails otherwise.
  explicit NatsCluster(int size = 3) : NatsCluster(sized(size)) {}
  explicit NatsCluster(const NatsClusterOptions& options);

  NatsServer& node(int i);  // 0-based: node(0) is "n1"; throws std::out_of_range
  const NatsServer& node(int i) const;
  int size() const;
  std::vector<std::string> urls() const;  // client URLs of all nodes
  std::string joined_urls() const;        // comma-separated, as nats.c accepts a server list
  NatsServer* find(const std::string& server_name);  // by server name, nullptr if none

  // Name of the JetStream meta leader as seen by the first running node, "" if none is known.
  std::string meta_leader() const;
  // Nodes in the meta group, as its leader's /jsz counts them: 0 with no leader, -1 when the
  // server does not say (2.9).
  int meta_group_size() const;
  // Waits until every running, unpaused node is ready (see NatsServer::wait_ready); throws
  // otherwise.
  void wait_ready(std::chrono::milliseconds timeout = kClusterReadyTimeout) const;

 private:
  static NatsClusterOptions sized(int size) {
    NatsClusterOptions options;
    options.size = size;
    return options;
  }
  std::vector<std::unique_ptr<NatsServer>> nodes_;
};

// The version of the nats-server the fixtures start (the first in PATH): {2, 10} for 2.10.27,
// {2, 15} for 2.15.1, {0, 0} when it cannot be read. Tests of what 2.10 and later do better
// compare with >= {2, 10}, so each later version runs them as 2.10 does; they skip on 2.9.
std::pair<int, int> nats_server_version();

// broker::free_loopback_ports, throwing std::runtime_error when the system refuses a socket.
int free_loopback_port();  // bind 127.0.0.1:0, read the port, close
// Spawns a child process (as the daemon spawns a worker sink) and returns the local TCP ports of
// the sockets it inherited (read from /proc), then kills it. A server's port here means a child
// would keep the server's listener or one of its connections alive.
std::set<int> tcp_ports_a_child_inherits();
// `count` distinct free ports: all probe sockets stay bound until every port is picked, so the
// kernel cannot hand out the same port twice.
std::vector<int> free_loopback_ports(size_t count);

// Value of the string field "leader" inside the "meta_cluster" object of a /jsz body, "" if none.
std::string jsz_meta_leader(const std::string& jsz_body);

}  // namespace natsfleet::testing
