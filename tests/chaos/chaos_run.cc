#include "chaos/chaos_run.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>
#include <thread>

#include "chaos/history.h"
#include "chaos/schedule.h"
#include "chaos/sink_observer.h"
#include "chaos/tcp_proxy.h"
#include "chaos/timeline.h"
#include "fleet/ordered/partition_plan.h"
#include "nats/connection.h"
#include "nats/jetstream_api.h"
#include "support/broker_client.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"

namespace natsfleet::chaos {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using testing::BrokerClient;
using testing::DaemonProcess;
using testing::NatsCluster;
using testing::NatsServer;

constexpr const char* kStream = "CHAOS";
constexpr const char* kSubject = "chaos.jobs";
constexpr const char* kDeadStream = "CHAOS_DEAD";
constexpr const char* kDeadSubject = "chaos.dead";
constexpr const char* kConsumer = "chaos";
// Per-key runs (RunOptions::keys): published to chaos.jobs.k<key>; the work's subject.
constexpr const char* kKeyedSubject = "chaos.jobs.*";
constexpr int kKeyToken = 3;
// Sink files are read this often. A read of appended bytes costs little; the shorter the gap, the
// narrower each record's window (HandlingRecord::absent_ms..at_ms) and the fewer records of two
// replicas the checker cannot order.
constexpr milliseconds kSinkPollInterval{5};
// For histories recorded before each record kept its window: their files were read every 50 ms.
constexpr double kWindowlessOrderToleranceMs = 100;

fleet::PartitionPlan plan_of(const RunOptions& o) {
  return fleet::PartitionPlan::make(kKeyedSubject, kKeyToken, o.partitions).value();
}
std::string subject_of(const RunOptions& o, int64_t id) {
  if (o.keys <= 0) return kSubject;
  return std::string("chaos.jobs.k") + std::to_string(id % o.keys);
}
// nats-server's leader election takes up to ~9 s after the old leader goes quiet.
constexpr milliseconds kBrokerElection{10'000};

struct Replica {
  int index = 0;
  int health_port = 0;
  std::string dir;                               // <out>/replica-N
  std::string sink_dir;                          // <dir>/sink, swapped away during a sink outage
  std::vector<std::unique_ptr<TcpProxy>> links;  // one per node
  std::unique_ptr<DaemonProcess> process;
  bool paused = false;
};

// Probes of a sink that is down back off up to this: short, so a sink that is back is found at
// once (the default, 30 s, suits a remote service more than this run's local files).
milliseconds retry_max_of(const RunOptions& o) { return o.ack_wait / 2; }

std::string replica_config(const Replica& r, const RunOptions& o) {
  std::string servers;
  for (const auto& link : r.links) {
    if (!servers.empty()) servers += ", ";
    servers += "\"nats://127.0.0.1:" + std::to_string(link->port()) + "\"";
  }
  auto ms = [](milliseconds d) { return "\"" + std::to_string(d.count()) + "ms\""; };
  return std::string("name = \"chaos\"\n") + (o.debug_log ? "log_level = \"debug\"\n" : "") +
         "servers = [" + servers +
         "]\n"
         "[health]\n"
         "listen = \"127.0.0.1:" +
         std::to_string(r.health_port) +
         "\"\n"
         "[[work]]\n"
         "name = \"" +
         kConsumer +
         "\"\n"
         "subject = \"" +
         (o.keys > 0 ? kKeyedSubject : kSubject) + "\"\n" +
         (o.keys > 0 ? "ordering = \"per-key\"\nkey_token = " + std::to_string(kKeyToken) +
                           "\npartitions = " + std::to_string(o.partitions) + "\n"
                     : std::string()) +
         ""
         "stream = \"" +
         kStream +
         "\"\n"
         "ack_wait = " +
         ms(o.ack_wait) + "\nheartbeat = " + ms(o.heartbeat) +
         "\n"
         "concurrency = 4\n"
         "max_deliver = 5\n"
         "retry_max = " +
         ms(retry_max_of(o)) +
         "\n"
         "dead_letter = \"" +
         kDeadSubject +
         "\"\n"
         "sink = { type = \"file\", path = \"" +
         r.sink_dir + "/out.jsonl\", fsync = \"batch\" }\n";
}

// Everything the run shares between the nemesis (main thread) and the recording threads.
struct Recorder {
  std::mutex mu;
  std::vector<PublishRecord> publishes;
  std::vector<HandlingRecord> handlings;
  std::vector<ReadySample> readiness;
  size_t unreadable = 0;
};

void publisher_loop(const RunOptions& o, const std::vector<std::string>& urls,
                    const RunClock& clock, std::atomic<bool>& stop, Recorder& rec) {
  // Its own connection with a short ping interval: a publisher stuck on a partitioned node moves
  // to another within seconds, so publishing goes on while one node is cut off.
  nats::ConnectOptions connect;
  connect.servers = urls;
  connect.name = "chaos-publisher";
  connect.reconnect_wait_min = milliseconds(20);
  connect.reconnect_wait_max = milliseconds(200);
  connect.ping_interval = milliseconds(1'000);
  auto connection = nats::Connection::open(connect, {});
  if (!connection) throw std::runtime_error("publisher: " + connection.error().describe());
  nats::JetStreamApi api(**connection, std::chrono::seconds(2));
  const auto interval = std::chrono::microseconds(1'000'000 / std::max(1, o.publish_rate));
  auto next = Clock::now();
  for (int64_t id = 0; !stop; ++id) {
    std::this_thread::sleep_until(next);
    next += interval;
    PublishRecord p;
    p.id = id;
    p.sent_ms = clock.now_ms();
    // The same Nats-Msg-Id on every attempt: a retry of a publish whose ack was lost is not
    // stored twice (the stream's duplicate window is 2 minutes).
    const Headers headers{{"Nats-Msg-Id", {payload_of(id)}}};
    const auto give_up = Clock::now() + std::chrono::seconds(30);
    while (!stop || p.attempts == 0) {
      ++p.attempts;
      auto ack = api.publish(subject_of(o, id), payload_of(id), headers);
      if (ack) {
        p.acked = true;
        p.seq = ack->seq;
        p.ack_ms = clock.now_ms();
        break;
      }
      p.error = ack.error().describe();
      if (Clock::now() > give_up) break;
      std::this_thread::sleep_for(milliseconds(100));
    }
    // A backlog after an outage is not published in a burst: pacing restarts from now.
    next = std::max(next, Clock::now());
    std::lock_guard lock(rec.mu);
    rec.publishes.push_back(std::move(p));
  }
}

void readiness_loop(int replica, int port, const RunClock& clock, std::atomic<bool>& stop,
                    Recorder& rec) {
  int last = -1;
  while (!stop) {
    int status = 0;
    testing::http_get(port, "/readyz", &status, milliseconds(300));
    const int ready = status == 200 ? 1 : 0;
    if (ready != last) {
      std::lock_guard lock(rec.mu);
      rec.readiness.push_back(ReadySample{replica, clock.now_ms(), ready == 1});
      last = ready;
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
}

// Ids in the dead-letter stream from sequence `from` on; advances `from`.
void read_dead_letters(BrokerClient& admin, uint64_t& from, std::set<int64_t>& ids) {
  auto info = admin.api().stream_info(kDeadStream);
  if (!info) return;
  for (uint64_t seq = std::max(from, info->first_seq); seq <= info->last_seq; ++seq) {
    auto message = admin.api().get_message(kDeadStream, seq);
    if (!message) return;
    const int64_t id = id_of(message->data);
    if (id >= 0) ids.insert(id);
    from = seq + 1;
  }
}

class Nemesis {
 public:
  Nemesis(NatsCluster& cluster, std::vector<Replica>& replicas,
          std::map<std::pair<int, int>, std::unique_ptr<TcpProxy>>& routes,
          std::vector<std::unique_ptr<TcpProxy>>& publisher_links, BrokerClient& admin,
          const RunClock& clock, const RunOptions& options)
      : cluster_(cluster),
        replicas_(replicas),
        routes_(routes),
        publisher_links_(publisher_links),
        admin_(admin),
        clock_(clock),
        options_(options) {}

  void begin(const ScheduledFault& f, FaultRecord& record) {
    record.kind = fault_kind_name(f.kind);
    record.start_ms = clock_.now_ms();
    switch (f.kind) {
      case FaultKind::replica_kill: {
        auto& r = replicas_[static_cast<size_t>(f.target)];
        record.target = "r" + std::to_string(r.index + 1);
        if (r.paused) r.process->signal(SIGCONT);
        r.paused = false;
        r.process->signal(SIGKILL);
        r.process->wait_exit(std::chrono::seconds(10));
        break;
      }
      case FaultKind::replica_pause: {
        auto& r = replicas_[static_cast<size_t>(f.target)];
        record.target = "r" + std::to_string(r.index + 1);
        r.process->signal(SIGSTOP);
        r.paused = true;
        break;
      }
      case FaultKind::replica_partition: {
        auto& r = replicas_[static_cast<size_t>(f.target)];
        record.target = "r" + std::to_string(r.index + 1);
        for (auto& link : r.links) link->set_mode(LinkMode::blackhole);
        break;
      }
      case FaultKind::sink_outage: {
        auto& r = replicas_[static_cast<size_t>(f.target)];
        record.target = "r" + std::to_string(r.index + 1);
        // The sink's folder goes away and a plain file takes its path: the file sink notices
        // its file moved, cannot open the path again, and must hold its work until it can.
        fs::rename(r.sink_dir, r.sink_dir + ".away");
        std::ofstream(r.sink_dir) << "not a directory\n";
        break;
      }
      case FaultKind::node_kill:
      case FaultKind::leader_kill: {
        const int node = f.kind == FaultKind::leader_kill ? stream_leader(f.target) : f.target;
        target_node_ = node;
        record.target = cluster_.node(node).name();
        if (f.kind == FaultKind::leader_kill) record.target += " (stream leader)";
        cluster_.node(node).kill();
        break;
      }
      case FaultKind::node_pause:
        target_node_ = f.target;
        record.target = cluster_.node(f.target).name();
        cluster_.node(f.target).pause();
        break;
      case FaultKind::node_partition:
        target_node_ = f.target;
        record.target = cluster_.node(f.target).name();
        set_node_links(f.target, LinkMode::blackhole, milliseconds(0));
        break;
      case FaultKind::link_delay:
        target_node_ = f.target;
        record.target = cluster_.node(f.target).name();
        set_node_links(f.target, LinkMode::delay, options_.ack_wait / 20);
        break;
      case FaultKind::link_drop:
        target_node_ = f.target;
        record.target = cluster_.node(f.target).name();
        set_node_links(f.target, LinkMode::drop, milliseconds(0));
        break;
      case FaultKind::consumer_delete:
        record.target = "consumer";
        if (options_.keys > 0) {
          delete_partition_readers(0, record);
        } else if (auto r = admin_.api().delete_consumer(kStream, kConsumer); !r) {
          record.target += " (delete failed: " + r.error().describe() + ")";
        }
        break;
    }
  }

  void end(const ScheduledFault& f, FaultRecord& record) {
    switch (f.kind) {
      case FaultKind::replica_kill:
        replicas_[static_cast<size_t>(f.target)].process->start();
        break;
      case FaultKind::replica_pause: {
        auto& r = replicas_[static_cast<size_t>(f.target)];
        r.process->signal(SIGCONT);
        r.paused = false;
        break;
      }
      case FaultKind::replica_partition:
        for (auto& link : replicas_[static_cast<size_t>(f.target)].links)
          link->set_mode(LinkMode::pass);
        break;
      case FaultKind::sink_outage: {
        auto& r = replicas_[static_cast<size_t>(f.target)];
        // The folder comes back in one step, exchanged with the plain file: the sink retries
        // all the while, and between a remove and a rename it would make a folder of its own.
        if (::renameat2(AT_FDCWD, (r.sink_dir + ".away").c_str(), AT_FDCWD, r.sink_dir.c_str(),
                        RENAME_EXCHANGE) != 0)
          throw fs::filesystem_error("cannot swap the sink folder back", r.sink_dir,
                                     std::error_code(errno, std::generic_category()));
        fs::remove(r.sink_dir + ".away");
        break;
      }
      case FaultKind::node_kill:
      case FaultKind::leader_kill:
        cluster_.node(target_node_).restart_without_waiting();
        break;
      case FaultKind::node_pause:
        cluster_.node(target_node_).resume();
        break;
      case FaultKind::node_partition:
      case FaultKind::link_delay:
      case FaultKind::link_drop:
        set_node_links(target_node_, LinkMode::pass, milliseconds(0));
        break;
      case FaultKind::consumer_delete:
        break;
    }
    record.end_ms = clock_.now_ms();
  }

 private:
  // Per-key: the consumer partition `p`'s owner reads through, named <work>-p<p>-e<epoch>g<n>
  // (a new one each term; one left over from an older term may still be there too).
  void delete_partition_readers(int p, FaultRecord& record) {
    const std::string prefix = fleet::partition_consumer(kConsumer, p) + "-e";
    auto names = admin_.api().consumer_names(kStream);
    if (!names) {
      record.target += " (listing failed: " + names.error().describe() + ")";
      return;
    }
    std::string deleted;
    for (const auto& name : *names) {
      if (!name.starts_with(prefix)) continue;
      if (auto r = admin_.api().delete_consumer(kStream, name); !r) {
        record.target += " (delete of " + name + " failed: " + r.error().describe() + ")";
      } else {
        deleted += (deleted.empty() ? "" : ",") + name;
      }
    }
    record.target += " " + (deleted.empty() ? prefix + "* (none found)" : deleted);
  }

  int stream_leader(int fallback) {
    auto info = admin_.api().stream_info(kStream);
    if (info && !info->leader.empty()) {
      for (int i = 0; i < cluster_.size(); ++i)
        if (cluster_.node(i).name() == info->leader) return i;
    }
    return fallback;
  }

  // Every link that ends at `node`, and every route it dials or is dialled on.
  void set_node_links(int node, LinkMode mode, milliseconds delay) {
    for (auto& r : replicas_) r.links[static_cast<size_t>(node)]->set_mode(mode, delay);
    publisher_links_[static_cast<size_t>(node)]->set_mode(mode, delay);
    for (auto& [ends, proxy] : routes_)
      if (ends.first == node || ends.second == node) proxy->set_mode(mode, delay);
  }

  NatsCluster& cluster_;
  std::vector<Replica>& replicas_;
  std::map<std::pair<int, int>, std::unique_ptr<TcpProxy>>& routes_;
  std::vector<std::unique_ptr<TcpProxy>>& publisher_links_;
  BrokerClient& admin_;
  const RunClock& clock_;
  const RunOptions& options_;
  int target_node_ = 0;  // the broker lane has one fault at a time
};

void say(const RunClock& clock, const std::string& line) {
  std::printf("[%7.1f s] %s\n", clock.now_ms() / 1000, line.c_str());
  std::fflush(stdout);
}

// The make line that runs `o` again: its length, seed, keys and broker (Debian's 2.9 needs none).
std::string replay_command(const RunOptions& o) {
  std::string line =
      "make chaos SECONDS=" + std::to_string(o.length.count()) + " SEED=" + std::to_string(o.seed);
  if (o.keys > 0) line += " KEYS=" + std::to_string(o.keys);
  const auto [major, minor] = testing::nats_server_version();
  if (std::pair(major, minor) > std::pair(2, 9))
    line += " BROKER=" + std::to_string(major) + "." + std::to_string(minor);
  return line;
}

}  // namespace

AtSequence stream_holds(nats::JetStreamApi& api, const std::string& stream, uint64_t seq,
                        const std::string& data, std::string* error) {
  auto stored = api.get_message(stream, seq);
  if (stored) return stored->data == data ? AtSequence::that_message : AtSequence::another_message;
  if (stored.error().code.category() == jetstream_category() &&
      stored.error().code.value() == nats::kJsNoMessageFound)
    return AtSequence::nothing;
  if (error) *error = stored.error().describe();
  return AtSequence::unknown;
}

AtSequence stream_holds_on_subject(nats::JetStreamApi& api, const std::string& stream,
                                   const std::string& subject, const std::string& data,
                                   uint64_t* seq, std::string* error) {
  for (uint64_t from = 1;;) {
    auto stored = api.get_message(stream, from, subject);  // the subject's next from `from`
    if (!stored) {
      if (stored.error().code.category() == jetstream_category() &&
          stored.error().code.value() == nats::kJsNoMessageFound)
        return AtSequence::nothing;
      if (error) *error = stored.error().describe();
      return AtSequence::unknown;
    }
    if (stored->data == data) {
      if (seq) *seq = stored->seq;
      return AtSequence::that_message;
    }
    from = stored->seq + 1;
  }
}

CheckOptions check_options_for(const History& h) {
  double longest_outage = 0;
  for (const auto& f : h.faults)
    if (f.kind == fault_kind_name(FaultKind::sink_outage))
      longest_outage = std::max(longest_outage, f.end_ms - f.start_ms);
  const double election = static_cast<double>(kBrokerElection.count());
  CheckOptions options;
  options.stall_bound_ms =
      2 * h.ack_wait_ms + election + 4 * h.heartbeat_ms + longest_outage + h.retry_max_ms;
  options.blame_window_ms = 2 * h.ack_wait_ms + election;
  options.order_tolerance_ms = kWindowlessOrderToleranceMs;
  return options;
}

int run_chaos(const RunOptions& o) {
  // A folder reused (a replay into the same place, the test's fixed folder) starts empty: old
  // sink files would read as duplicates. Only a previous run's folder is cleared.
  if (fs::exists(o.out_dir) && !fs::is_empty(o.out_dir)) {
    if (!fs::exists(o.out_dir + "/schedule.txt")) {
      std::printf("%s exists and is not a chaos run's folder; choose another --out\n",
                  o.out_dir.c_str());
      return 2;
    }
    fs::remove_all(o.out_dir);
  }
  fs::create_directories(o.out_dir);
  const RunClock setup_clock;
  std::string kinds;
  for (FaultKind kind : o.faults)
    kinds += std::string(kinds.empty() ? "" : ",") + fault_kind_name(kind);
  say(setup_clock, "seed " + std::to_string(o.seed) + ", " + std::to_string(o.length.count()) +
                       " s, " + std::to_string(o.replicas) + " replicas, faults " +
                       (kinds.empty() ? std::string("of every kind") : kinds) + ", run folder " +
                       o.out_dir);

  ScheduleOptions schedule_options;
  schedule_options.length = o.length;
  schedule_options.ack_wait = o.ack_wait;
  schedule_options.replicas = o.replicas;
  schedule_options.nodes = 3;
  schedule_options.only = o.faults;
  const auto schedule = make_schedule(o.seed, schedule_options);
  {
    std::ofstream plan(o.out_dir + "/schedule.txt", std::ios::trunc);
    for (const auto& f : schedule) plan << describe(f) << '\n';
  }

  // Routes through proxies: node i dials node j at routes[{i, j}].
  std::map<std::pair<int, int>, std::unique_ptr<TcpProxy>> routes;
  testing::NatsClusterOptions cluster_options;
  cluster_options.size = 3;
  cluster_options.no_advertise = true;
  if (o.keys > 0) cluster_options.extra_config = plan_of(o).mappings_block();
  cluster_options.route_via = [&](int from, int to, int route_port) {
    auto& proxy = routes[{from, to}];
    proxy = std::make_unique<TcpProxy>(route_port);
    return proxy->port();
  };
  std::unique_ptr<NatsCluster> cluster;
  try {
    cluster = std::make_unique<NatsCluster>(cluster_options);
  } catch (const std::exception& e) {
    std::printf("cannot start the cluster: %s\n", e.what());
    return 2;
  }
  BrokerClient admin(cluster->urls());
  admin.create_stream(kStream, {o.keys > 0 ? plan_of(o).stored_subjects() : kSubject}, 3);
  admin.create_stream(kDeadStream, {kDeadSubject}, 3);

  std::vector<std::unique_ptr<TcpProxy>> publisher_links;
  std::vector<std::string> publisher_urls;
  for (int n = 0; n < 3; ++n) {
    publisher_links.push_back(std::make_unique<TcpProxy>(cluster->node(n).port()));
    publisher_urls.push_back("nats://127.0.0.1:" + std::to_string(publisher_links.back()->port()));
  }

  std::vector<Replica> replicas(static_cast<size_t>(o.replicas));
  const auto health_ports = testing::free_loopback_ports(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) {
    auto& r = replicas[i];
    r.index = static_cast<int>(i);
    r.health_port = health_ports[i];
    r.dir = o.out_dir + "/replica-" + std::to_string(i + 1);
    r.sink_dir = r.dir + "/sink";
    fs::create_directories(r.sink_dir);
    for (int n = 0; n < 3; ++n)
      r.links.push_back(std::make_unique<TcpProxy>(cluster->node(n).port()));
    r.process = std::make_unique<DaemonProcess>(r.dir, "natsfleet", replica_config(r, o));
  }
  for (auto& r : replicas) r.process->start();
  const bool all_ready = testing::wait_for(
      [&] {
        return std::all_of(replicas.begin(), replicas.end(),
                           [](const Replica& r) { return testing::readyz(r.health_port) == 200; });
      },
      std::chrono::seconds(30), milliseconds(100));
  if (!all_ready) {
    std::printf("the replicas did not become ready within 30 s; see %s/replica-*/natsfleet.log\n",
                o.out_dir.c_str());
    return 2;
  }

  const RunClock clock;
  say(clock, "fleet ready; publishing at " + std::to_string(o.publish_rate) +
                 " msg/s, nemesis on (" + std::to_string(schedule.size()) + " faults planned)");
  Recorder rec;
  std::atomic<bool> stop_publishing{false};
  std::atomic<bool> stop_recording{false};
  std::thread publisher([&] {
    try {
      publisher_loop(o, publisher_urls, clock, stop_publishing, rec);
    } catch (const std::exception& e) {
      std::printf("publisher: %s\n", e.what());
    }
  });
  std::vector<std::thread> probes;
  for (const auto& r : replicas)
    probes.emplace_back(readiness_loop, r.index, r.health_port, std::cref(clock),
                        std::ref(stop_recording), std::ref(rec));
  std::vector<std::unique_ptr<SinkObserver>> observers;
  for (const auto& r : replicas)
    observers.push_back(std::make_unique<SinkObserver>(r.sink_dir + "/out.jsonl", r.index));
  auto observe = [&] {
    std::vector<HandlingRecord> seen;
    size_t unreadable = 0;
    for (auto& observer : observers) observer->poll(clock, seen, unreadable);
    std::lock_guard lock(rec.mu);
    rec.handlings.insert(rec.handlings.end(), seen.begin(), seen.end());
    rec.unreadable += unreadable;
  };
  std::thread observer([&] {
    while (!stop_recording) {
      observe();
      std::this_thread::sleep_for(kSinkPollInterval);
    }
  });

  // The nemesis: every fault's start and end, in time order.
  struct Event {
    milliseconds at;
    size_t fault;
    bool start;
  };
  std::vector<Event> events;
  for (size_t i = 0; i < schedule.size(); ++i) {
    events.push_back({schedule[i].start, i, true});
    events.push_back({schedule[i].start + schedule[i].duration, i, false});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.at < b.at || (a.at == b.at && !a.start && b.start);
  });
  std::vector<FaultRecord> faults(schedule.size());
  std::vector<bool> begun(schedule.size(), false);
  Nemesis nemesis(*cluster, replicas, routes, publisher_links, admin, clock, o);
  const milliseconds length = o.length;
  for (const auto& e : events) {
    // Faults still open at the end of the run are healed below, at once.
    if (e.at >= length && e.start) continue;
    std::this_thread::sleep_until(clock.at(std::min(e.at, milliseconds(length))));
    const auto& f = schedule[e.fault];
    try {
      if (e.start) {
        nemesis.begin(f, faults[e.fault]);
        begun[e.fault] = true;
        say(clock, std::string("fault ") + faults[e.fault].kind + " " + faults[e.fault].target);
      } else if (begun[e.fault]) {
        nemesis.end(f, faults[e.fault]);
        say(clock, std::string("healed ") + faults[e.fault].kind + " " + faults[e.fault].target);
      }
    } catch (const std::exception& ex) {
      say(clock, std::string("nemesis: ") + ex.what());
    }
  }
  stop_publishing = true;
  publisher.join();
  const double faults_end_ms = clock.now_ms();
  say(clock, "faults over, publishing stopped; waiting for the fleet to drain");
  // A node restarted at the very end must be back before the drain is judged.
  try {
    cluster->wait_ready();
  } catch (const std::exception& e) {
    say(clock, std::string("cluster not ready after the faults: ") + e.what());
  }

  // Drain: done when every acked message was handled, dead-lettered or lost by the broker (its
  // ack's sequence holds another message now), or the bound passed.
  std::set<int64_t> dead;
  std::set<int64_t> broker_lost;
  std::string stream_error;  // the last answer that settled nothing, for the report
  auto gone_from_stream = [&](const PublishRecord& p) {
    if (p.seq == 0)
      return stream_holds_on_subject(admin.api(), kStream, subject_of(o, p.id), payload_of(p.id),
                                     nullptr, &stream_error) == AtSequence::nothing;
    const auto at = stream_holds(admin.api(), kStream, p.seq, payload_of(p.id), &stream_error);
    return at == AtSequence::another_message || at == AtSequence::nothing;
  };
  uint64_t dead_from = 1;
  History history;
  history.seed = o.seed;
  history.replicas = o.replicas;
  history.ack_wait_ms = static_cast<double>(o.ack_wait.count());
  history.heartbeat_ms = static_cast<double>(o.heartbeat.count());
  history.keys = o.keys;
  history.retry_max_ms = static_cast<double>(retry_max_of(o).count());
  history.faults_end_ms = faults_end_ms;
  for (size_t i = 0; i < faults.size(); ++i)
    if (begun[i]) history.faults.push_back(faults[i]);
  const auto options = check_options_for(history);
  const auto drain_deadline = Clock::now() +
                              milliseconds(static_cast<int64_t>(options.stall_bound_ms)) +
                              std::chrono::seconds(30);
  size_t outstanding = 0;
  std::vector<PublishRecord> waiting;
  int rounds = 0;
  while (Clock::now() < drain_deadline) {
    read_dead_letters(admin, dead_from, dead);
    std::set<int64_t> handled;
    {
      std::lock_guard lock(rec.mu);
      for (const auto& h : rec.handlings) handled.insert(h.id);
      waiting.clear();
      for (const auto& p : rec.publishes)
        if (p.acked && !handled.count(p.id) && !dead.count(p.id) && !broker_lost.count(p.id))
          waiting.push_back(p);
    }
    outstanding = waiting.size();
    if (outstanding == 0) break;
    // The few still missing: does the stream hold them at all?
    if (outstanding <= 1000 && ++rounds % 10 == 0) {
      for (const auto& p : waiting)
        if (gone_from_stream(p)) broker_lost.insert(p.id);
    }
    std::this_thread::sleep_for(milliseconds(200));
  }
  say(clock,
      outstanding == 0
          ? "drained"
          : "drain bound passed with " + std::to_string(outstanding) +
                " acknowledged message(s) not handled" +
                (stream_error.empty() ? std::string() : " (stream read: " + stream_error + ")"));
  // Let redeliveries still in flight land, so duplicates are counted whole.
  std::this_thread::sleep_for(o.ack_wait);
  for (auto& r : replicas) r.process->signal(SIGTERM);
  for (auto& r : replicas) r.process->wait_exit(std::chrono::seconds(15));
  stop_recording = true;
  for (auto& t : probes) t.join();
  observer.join();
  observe();
  read_dead_letters(admin, dead_from, dead);

  history.end_ms = clock.now_ms();
  history.publishes = std::move(rec.publishes);
  history.handlings = std::move(rec.handlings);
  history.readiness = std::move(rec.readiness);
  history.unreadable_lines = rec.unreadable;
  history.dead_lettered.assign(dead.begin(), dead.end());
  history.broker_lost.assign(broker_lost.begin(), broker_lost.end());
  write_history(o.out_dir, history);

  const Verdict verdict = check(history, options);
  const auto picture = write_timeline(o.out_dir, history, verdict);
  auto summary = to_json(verdict);
  summary["seed"] = o.seed;
  summary["seconds"] = o.length.count();
  if (!o.faults.empty()) {
    auto& only = summary["fault_kinds"] = nlohmann::json::array();
    for (FaultKind kind : o.faults) only.push_back(fault_kind_name(kind));
  }
  summary["replicas"] = o.replicas;
  summary["ack_wait_ms"] = o.ack_wait.count();
  summary["heartbeat_ms"] = o.heartbeat.count();
  std::ofstream(o.out_dir + "/summary.json", std::ios::trunc) << summary.dump(2) << '\n';
  std::printf("\n%s", report(verdict).c_str());
  std::printf("history, summary.json%s in %s\n", picture.empty() ? " and timeline.png" : "",
              o.out_dir.c_str());
  if (!picture.empty()) std::printf("no timeline picture: %s\n", picture.c_str());
  std::printf("replay: %s\n", replay_command(o).c_str());
  return verdict.pass ? 0 : 1;
}

}  // namespace natsfleet::chaos
