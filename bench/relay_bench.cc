// The relay under load, as members' browsers see it: WebSocket sessions spread over two replicas
// (Fleet + Relay + WebSocketGateway each), statuses published round-robin over the members by a
// third replica's relay, and every session checked to get exactly its member's statuses (no
// other member's, none twice, none missing). Prints publish-to-browser latency and throughput
// beside a baseline on the same broker in the same run: natsfleet's core NATS Fleet::publish to a
// core BroadcastSpec handler (no stream, no relay, no WebSocket).
//
//   natsfleet-relay-bench [--members M] [--per-replica S] [--statuses N] [--rate R]
//                         [--publishers P] [--client-threads T] [--ordered]
//
// Sessions: M members x S sessions on each of the two replicas (default 500 x 2 x 2 = 2,000).
// --rate paces publishing in statuses/s over all publishers (0: as fast as they go). Exit code 0
// when every session got exactly its member's statuses, 2 when not, 1 when the setup failed.
// --ordered passes each status's event order (its seq + 1), as a handler of per-key ordered work
// does: Relay::publish then reads the member's newest stored status before storing one. With one
// publisher nothing is superseded, so the same exactly-once check holds.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "broker/embedded_broker.h"
#include "natsfleet/fleet.h"
#include "natsfleet/relay.h"
#include "natsfleet/relay_gateway.h"

namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* kRelayName = "bench-status";
constexpr const char* kBaselineSubject = "bench.baseline";
constexpr int kReplicas = 2;
// Upgrades in flight per client thread: a listener's backlog never overflows, so no SYN waits
// out a retransmit and setup stays quick.
constexpr int kConnectingPerThread = 64;
constexpr auto kHandshakeTimeout = 10s;
constexpr auto kSetupTimeout = 30s;
constexpr auto kDrainTimeout = 20s;  // after the last publish, for the last frame to arrive
constexpr auto kPublishGiveUp = 5s;  // per status, retrying a publish the stream did not store
constexpr auto kSettle = 300ms;      // after the expected count: time for extra frames to show

// Set while the broker runs, so that a failure anywhere leaves no nats-server behind.
natsfleet::broker::EmbeddedBroker* running_broker = nullptr;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "relay bench: %s\n", what.c_str());
  if (running_broker != nullptr) {
    running_broker->kill();
    std::error_code ignored;
    std::filesystem::remove_all(running_broker->state_dir(), ignored);
  }
  std::fflush(nullptr);
  std::_Exit(1);  // fleet, gateway and client threads still run: no static destructors under them
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

template <typename Predicate>
bool wait_until(Predicate done, std::chrono::milliseconds within) {
  const auto deadline = Clock::now() + within;
  while (!done()) {
    if (Clock::now() >= deadline) return done();
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// 2,000 sessions hold 4,000 loopback sockets in this one process, plus the broker connections.
// Returns what the soft limit was and what it is now.
std::pair<rlim_t, rlim_t> raise_descriptor_limit(rlim_t needed) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) die("getrlimit(RLIMIT_NOFILE) failed");
  const rlim_t was = limit.rlim_cur;
  if (was >= needed) return {was, was};
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed)
    die("needs " + std::to_string(needed) + " file descriptors, the hard limit is " +
        std::to_string(limit.rlim_max) + ": raise it (ulimit -Hn) or pass fewer --members");
  limit.rlim_cur = needed;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
    die("cannot raise RLIMIT_NOFILE from " + std::to_string(was) + " to " + std::to_string(needed));
  return {was, needed};
}

std::string member_name(int member) {
  char name[16];
  std::snprintf(name, sizeof name, "m%04d", member);
  return name;
}

std::string status_payload(int member, int seq, int64_t sent_ns) {
  return "{\"member\":\"" + member_name(member) + "\",\"seq\":" + std::to_string(seq) +
         ",\"sent_ns\":" + std::to_string(sent_ns) + ",\"state\":\"synced\"}";
}

struct Status {
  std::string_view member;
  int seq = 0;
  int64_t sent_ns = 0;
};

// Reads back what status_payload wrote; nothing when a field is missing or malformed.
std::optional<Status> parse_status(std::string_view text) {
  Status s;
  auto number_after = [&](std::string_view key, auto& out) {
    const auto at = text.find(key);
    if (at == std::string_view::npos) return false;
    const char* first = text.data() + at + key.size();
    return std::from_chars(first, text.data() + text.size(), out).ec == std::errc{};
  };
  constexpr std::string_view kMember = "\"member\":\"";
  const auto at = text.find(kMember);
  if (at == std::string_view::npos) return std::nullopt;
  const auto begin = at + kMember.size();
  const auto end = text.find('"', begin);
  if (end == std::string_view::npos) return std::nullopt;
  s.member = text.substr(begin, end - begin);
  if (!number_after("\"seq\":", s.seq) || !number_after("\"sent_ns\":", s.sent_ns))
    return std::nullopt;
  return s;
}

struct Percentiles {
  size_t count = 0;
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
};

Percentiles percentiles(std::vector<int64_t> ns) {
  Percentiles p;
  p.count = ns.size();
  if (ns.empty()) return p;
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(ns.size())));
    return static_cast<double>(ns[std::clamp<size_t>(rank, 1, ns.size()) - 1]) / 1e6;
  };
  p.p50_ms = at(0.50);
  p.p90_ms = at(0.90);
  p.p99_ms = at(0.99);
  p.max_ms = static_cast<double>(ns.back()) / 1e6;
  return p;
}

void print_percentiles(const char* label, const Percentiles& p) {
  std::printf("  %-44s p50 %7.3f  p90 %7.3f  p99 %7.3f  max %8.3f ms  (n=%zu)\n", label, p.p50_ms,
              p.p90_ms, p.p99_ms, p.max_ms, p.count);
}

// Publishes statuses 0..count-1 from `publishers` threads, status i due at start + i / rate (all
// at once when rate is 0). `publish_one(i)` returns once status i is published.
struct PublishRun {
  int64_t start_ns = 0;
  double seconds = 0;
  std::vector<int64_t> behind_ns;  // how late each status left against its schedule (paced)
  std::vector<int64_t> call_ns;    // how long each publish_one took
};

PublishRun publish_paced(int count, double rate, int publishers,
                         const std::function<void(int)>& publish_one) {
  PublishRun run;
  run.behind_ns.assign(static_cast<size_t>(count), 0);
  run.call_ns.assign(static_cast<size_t>(count), 0);
  std::atomic<int> next{0};
  const auto start = Clock::now();
  run.start_ns = now_ns();
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(publishers));
  for (int t = 0; t < publishers; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < count; i = next++) {
        const auto index = static_cast<size_t>(i);
        if (rate > 0) {
          const auto due = start + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(i / rate));
          std::this_thread::sleep_until(due);
          run.behind_ns[index] =
              std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - due).count();
        }
        const int64_t began = now_ns();
        publish_one(i);
        run.call_ns[index] = now_ns() - began;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return run;
}

// Latency is taken from when a status actually left: a publisher that fell behind its schedule
// hides that wait, so say how far behind it fell, and where.
void print_publish_run(const PublishRun& run, int count, double rate) {
  std::printf("  published %d in %.2f s = %.0f statuses/s", count, run.seconds,
              count / run.seconds);
  if (rate > 0) {
    const auto worst = std::max_element(run.behind_ns.begin(), run.behind_ns.end());
    const auto late = std::count_if(run.behind_ns.begin(), run.behind_ns.end(),
                                    [](int64_t ns) { return ns > 1'000'000; });
    std::printf("; furthest behind schedule %.1f ms (status %td), %td statuses left > 1 ms late",
                static_cast<double>(*worst) / 1e6, worst - run.behind_ns.begin(), late);
  }
  std::printf("\n");
}

natsfleet::FleetOptions fleet_options(const std::string& url, const std::string& name) {
  natsfleet::FleetOptions o;
  o.name = name;
  o.servers = {url};
  return o;
}

void wait_connected(natsfleet::Fleet& fleet, const char* who) {
  if (!wait_until([&] { return fleet.health().connected; }, kSetupTimeout))
    die(std::string(who) + ": not connected to the broker within 30 s");
}

// The baseline: the same statuses over core NATS, Fleet::publish to a core broadcast's handler.
Percentiles core_baseline(const std::string& url, natsfleet::Fleet& publisher, int statuses,
                          double rate, int publishers) {
  natsfleet::Fleet subscriber(fleet_options(url, "bench-core-subscriber"));
  std::mutex mu;
  std::vector<int64_t> latency_ns;
  latency_ns.reserve(static_cast<size_t>(statuses));
  std::atomic<int> received{0};
  auto added = subscriber.add_broadcast({.name = "baseline", .subject = kBaselineSubject},
                                        [&](const natsfleet::Message& m) {
                                          const int64_t now = now_ns();
                                          if (const auto s = parse_status(m.data())) {
                                            std::lock_guard lock(mu);
                                            latency_ns.push_back(now - s->sent_ns);
                                          }
                                          received++;
                                        });
  if (!added) die("baseline broadcast: " + added.error().describe());
  if (auto started = subscriber.start(); !started)
    die("baseline subscriber: " + started.error().describe());
  if (!wait_until([&] { return subscriber.health().ready; }, kSetupTimeout))
    die("baseline subscription not bound within 30 s");

  const PublishRun run = publish_paced(statuses, rate, publishers, [&](int i) {
    const std::string payload = status_payload(0, i, now_ns());
    if (auto sent = publisher.publish(kBaselineSubject, payload); !sent)
      die("core publish: " + sent.error().describe());
  });
  if (!wait_until([&] { return received.load() >= statuses; }, kDrainTimeout))
    die("baseline: " + std::to_string(received.load()) + " of " + std::to_string(statuses) +
        " core messages arrived within 20 s");
  print_publish_run(run, statuses, rate);
  subscriber.shutdown(2s);
  std::lock_guard lock(mu);
  return percentiles(latency_ns);
}

// What one browser saw. Written only on its client thread; read once that thread has stopped.
struct SessionRecord {
  int member = 0;
  int replica = 0;
  std::vector<int> seqs;
  std::vector<int64_t> latency_ns;
  int64_t last_frame_ns = 0;
  uint64_t foreign = 0;     // frames naming another member
  uint64_t unreadable = 0;  // frames that are no status of ours
  bool open = false;
  std::string error;
};

struct ClientProgress {
  std::atomic<int> open{0};
  std::atomic<int> failed{0};
  std::atomic<int> closed_early{0};
  std::atomic<uint64_t> frames{0};
  std::atomic<bool> stopping{false};
};

// A browser stand-in: upgrades to GET /ws?member=<id>, then reads every frame, answering the
// gateway's pings as browsers do.
class BrowserClient : public std::enable_shared_from_this<BrowserClient> {
 public:
  BrowserClient(net::io_context& ioc, tcp::endpoint server, int member, int replica,
                ClientProgress& progress)
      : ws_(ioc),
        server_(std::move(server)),
        member_name_(member_name(member)),
        progress_(progress) {
    record_.member = member;
    record_.replica = replica;
  }

  // `done` runs once, on the client's thread, when the upgrade succeeded or failed.
  void start(std::function<void()> done) {
    done_ = std::move(done);
    auto& stream = beast::get_lowest_layer(ws_);
    stream.expires_after(kHandshakeTimeout);
    stream.async_connect(server_, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->fail("connect", ec);
      self->ws_.async_handshake("127.0.0.1", "/ws?member=" + self->member_name_,
                                [self](beast::error_code hs_ec) { self->on_upgraded(hs_ec); });
    });
  }

  const SessionRecord& record() const { return record_; }

 private:
  void on_upgraded(beast::error_code ec) {
    if (ec) return fail("upgrade", ec);
    beast::get_lowest_layer(ws_).expires_never();
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::client));
    record_.open = true;
    progress_.open++;
    done_();
    read();
  }

  void fail(const char* what, beast::error_code ec) {
    record_.error = std::string(what) + ": " + ec.message();
    progress_.failed++;
    done_();
  }

  void read() {
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->on_read(ec);
    });
  }

  void on_read(beast::error_code ec) {
    if (ec) {
      record_.open = false;
      if (!progress_.stopping) {
        record_.error = "closed early: " + ec.message();
        progress_.closed_early++;
      }
      return;
    }
    const int64_t now = now_ns();
    const auto data = buffer_.cdata();
    const std::string_view text(static_cast<const char*>(data.data()), data.size());
    if (const auto s = parse_status(text)) {
      if (s->member != member_name_) ++record_.foreign;
      record_.seqs.push_back(s->seq);
      record_.latency_ns.push_back(now - s->sent_ns);
      record_.last_frame_ns = now;
    } else {
      ++record_.unreadable;
    }
    buffer_.consume(buffer_.size());
    progress_.frames.fetch_add(1, std::memory_order_relaxed);
    read();
  }

  websocket::stream<beast::tcp_stream> ws_;
  const tcp::endpoint server_;
  const std::string member_name_;
  ClientProgress& progress_;
  beast::flat_buffer buffer_;
  std::function<void()> done_;
  SessionRecord record_;
};

// The browsers: io threads of their own, each upgrading at most kConnectingPerThread sessions at a
// time.
class ClientPool {
 public:
  explicit ClientPool(int threads) {
    for (int t = 0; t < threads; ++t) {
      contexts_.push_back(std::make_unique<net::io_context>(1));
      guards_.emplace_back(net::make_work_guard(*contexts_.back()));
    }
    launchers_.resize(static_cast<size_t>(threads));
  }
  ~ClientPool() { stop(); }
  ClientPool(const ClientPool&) = delete;
  ClientPool& operator=(const ClientPool&) = delete;

  void add(const tcp::endpoint& server, int member, int replica) {
    const size_t t = clients_.size() % contexts_.size();
    clients_.push_back(
        std::make_shared<BrowserClient>(*contexts_[t], server, member, replica, progress_));
    launchers_[t].queue.push_back(clients_.back());
  }

  void connect_all() {
    for (size_t t = 0; t < contexts_.size(); ++t) {
      for (int i = 0; i < kConnectingPerThread; ++i)
        net::post(*contexts_[t], [this, t] { launch_next(launchers_[t]); });
      threads_.emplace_back([ioc = contexts_[t].get()] { ioc->run(); });
    }
  }

  ClientProgress& progress() { return progress_; }
  size_t size() const { return clients_.size(); }

  // Stops the client threads; the records stay readable.
  void stop() {
    progress_.stopping = true;
    for (auto& guard : guards_) guard.reset();
    for (auto& ioc : contexts_) ioc->stop();
    for (auto& thread : threads_) thread.join();
    threads_.clear();
  }

  const SessionRecord& record(size_t i) const { return clients_[i]->record(); }

 private:
  struct Launcher {  // touched only on its context's thread
    std::vector<std::shared_ptr<BrowserClient>> queue;
    size_t next = 0;
  };

  void launch_next(Launcher& launcher) {
    if (launcher.next >= launcher.queue.size()) return;
    launcher.queue[launcher.next++]->start([this, &launcher] { launch_next(launcher); });
  }

  ClientProgress progress_;
  std::vector<std::unique_ptr<net::io_context>> contexts_;  // before the clients: outlives them
  std::vector<net::executor_work_guard<net::io_context::executor_type>> guards_;
  std::vector<Launcher> launchers_;
  std::vector<std::shared_ptr<BrowserClient>> clients_;
  std::vector<std::thread> threads_;
};

// A replica as a service runs it: its fleet, its relay, and the gateway its browsers attach to.
struct Replica {
  Replica(const std::string& url, const std::string& name)
      : fleet(fleet_options(url, name)),
        relay(fleet, {.name = kRelayName}),
        gateway(relay, {.host = "127.0.0.1", .port = 0}) {}

  bool subscribed() const {
    const auto h = fleet.health();
    return h.ready && !h.subscriptions.empty();
  }

  natsfleet::Fleet fleet;
  natsfleet::Relay relay;
  natsfleet::RelayGateway gateway;  // last: stopped before the relay goes
};

struct Options {
  int members = 500;
  int per_replica = 2;  // sessions per member on each replica
  int statuses = 10'000;
  double rate = 2000;
  int publishers = 1;
  int client_threads = 2;
  bool ordered = false;  // statuses carry their event order
};

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--ordered") {
      o.ordered = true;
      continue;
    }
    if (i + 1 >= argc) die("missing value for " + std::string(flag));
    const char* value = argv[++i];
    if (flag == "--members")
      o.members = std::atoi(value);
    else if (flag == "--per-replica")
      o.per_replica = std::atoi(value);
    else if (flag == "--statuses")
      o.statuses = std::atoi(value);
    else if (flag == "--rate")
      o.rate = std::atof(value);
    else if (flag == "--publishers")
      o.publishers = std::atoi(value);
    else if (flag == "--client-threads")
      o.client_threads = std::atoi(value);
    else
      die("unknown flag " + std::string(flag));
  }
  if (o.members < 1 || o.per_replica < 1 || o.statuses < 1 || o.rate < 0 || o.publishers < 1 ||
      o.client_threads < 1)
    die("--members, --per-replica, --statuses, --publishers and --client-threads must be "
        "positive, --rate not negative");
  if (o.ordered && o.publishers != 1)
    die("--ordered takes one publisher: with several, a status can be superseded on the way");
  return o;
}

struct Verdict {
  int sessions_ok = 0;
  uint64_t missing = 0, duplicates = 0, foreign = 0, unreadable = 0;
  int out_of_order = 0;  // sessions that saw seqs out of order (reported, not failed)
  int closed_early = 0;
  std::string first_problem;
};

// Every session must hold exactly the statuses published for its member: seq % members == member.
Verdict check_sessions(const ClientPool& pool, const Options& o) {
  Verdict v;
  for (size_t c = 0; c < pool.size(); ++c) {
    const SessionRecord& r = pool.record(c);
    std::vector<int> got = r.seqs;
    if (!std::is_sorted(got.begin(), got.end())) v.out_of_order++;
    std::sort(got.begin(), got.end());
    uint64_t duplicates = 0, foreign_seqs = 0, missing = 0;
    for (size_t i = 1; i < got.size(); ++i)
      if (got[i] == got[i - 1]) duplicates++;
    for (int seq : got)
      if (seq < 0 || seq >= o.statuses || seq % o.members != r.member) foreign_seqs++;
    // A frame is another member's by its member field or by its seq: count it once.
    const uint64_t foreign = std::max(r.foreign, foreign_seqs);
    got.erase(std::unique(got.begin(), got.end()), got.end());
    size_t matched = 0;
    for (int seq : got)
      if (seq >= 0 && seq < o.statuses && seq % o.members == r.member) matched++;
    const size_t expected =
        static_cast<size_t>(o.statuses / o.members) + (r.member < o.statuses % o.members ? 1 : 0);
    missing = expected - matched;
    const bool ok =
        missing == 0 && duplicates == 0 && foreign == 0 && r.unreadable == 0 && r.error.empty();
    if (ok) {
      v.sessions_ok++;
    } else if (v.first_problem.empty()) {
      v.first_problem = "session of " + member_name(r.member) + " on replica " +
                        std::string(1, static_cast<char>('a' + r.replica)) + ": got " +
                        std::to_string(r.seqs.size()) + " frames, expected " +
                        std::to_string(expected) + ", missing " + std::to_string(missing) +
                        ", duplicates " + std::to_string(duplicates) + ", foreign " +
                        std::to_string(foreign) + (r.error.empty() ? "" : ", " + r.error);
    }
    if (!r.error.empty() && r.error.starts_with("closed early")) v.closed_early++;
    v.missing += missing;
    v.duplicates += duplicates;
    v.foreign += foreign;
    v.unreadable += r.unreadable;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  spdlog::set_level(spdlog::level::warn);
  const int sessions_per_member = kReplicas * o.per_replica;
  const int sessions = o.members * sessions_per_member;
  // Two sockets a session (client and gateway side) plus the broker, its clients and slack.
  const auto [fd_limit_was, fd_limit] =
      raise_descriptor_limit(2 * static_cast<rlim_t>(sessions) + 1024);

  std::printf(
      "relay bench: %d sessions = %d members x %d sessions (%d on each of %d replicas), "
      "%d statuses round-robin over the members (%d per member, %d frames)\n",
      sessions, o.members, sessions_per_member, o.per_replica, kReplicas, o.statuses,
      o.statuses / o.members, o.statuses * sessions_per_member);
  if (o.rate > 0)
    std::printf("  paced at %.0f statuses/s", o.rate);
  else
    std::printf("  burst (--rate 0)");
  std::printf(", %d publisher thread(s), %d client io threads, 1 gateway io thread per replica%s\n",
              o.publishers, o.client_threads,
              o.ordered ? ", statuses in event order (--ordered)" : "");
  std::printf("  %u cpus, load average at start %s, RLIMIT_NOFILE %llu",
              std::thread::hardware_concurrency(), load_average().c_str(),
              static_cast<unsigned long long>(fd_limit));
  if (fd_limit != fd_limit_was)
    std::printf(" (raised from %llu)", static_cast<unsigned long long>(fd_limit_was));
  std::printf("\n");

  natsfleet::broker::EmbeddedBroker broker;
  if (auto started = broker.start(); !started) die(started.error().describe());
  running_broker = &broker;
  std::printf("  broker %s (embedded nats-server, JetStream, file store)\n", broker.url().c_str());

  natsfleet::Fleet publisher_fleet(fleet_options(broker.url(), "bench-publisher"));
  if (auto started = publisher_fleet.start(); !started) die(started.error().describe());
  wait_connected(publisher_fleet, "publisher");

  // Baseline first, while the process holds no sessions.
  std::printf(
      "baseline: core NATS publish->handler, same broker (Fleet::publish, core "
      "BroadcastSpec; no stream, no relay, no WebSocket)\n");
  const Percentiles baseline =
      core_baseline(broker.url(), publisher_fleet, o.statuses, o.rate, o.publishers);

  // The two replicas and their browsers.
  std::vector<std::unique_ptr<Replica>> replicas;
  for (int r = 0; r < kReplicas; ++r) {
    replicas.push_back(std::make_unique<Replica>(
        broker.url(), "bench-replica-" + std::string(1, static_cast<char>('a' + r))));
    if (auto started = replicas.back()->fleet.start(); !started) die(started.error().describe());
    if (auto started = replicas.back()->gateway.start(); !started) die(started.error().describe());
  }
  ClientPool pool(o.client_threads);
  for (int m = 0; m < o.members; ++m)
    for (int r = 0; r < kReplicas; ++r)
      for (int s = 0; s < o.per_replica; ++s)
        pool.add(
            tcp::endpoint(net::ip::make_address("127.0.0.1"),
                          static_cast<uint16_t>(replicas[static_cast<size_t>(r)]->gateway.port())),
            m, r);
  const auto connect_start = Clock::now();
  pool.connect_all();
  auto& progress = pool.progress();
  if (!wait_until([&] { return progress.open + progress.failed >= sessions; }, kSetupTimeout))
    die(std::to_string(progress.open.load()) + " of " + std::to_string(sessions) +
        " sessions upgraded within 30 s");
  if (progress.failed > 0) {
    pool.stop();  // the records are the client threads' until then
    for (size_t c = 0; c < pool.size(); ++c)
      if (!pool.record(c).error.empty())
        die(std::to_string(progress.failed.load()) +
            " sessions failed to upgrade; first: " + pool.record(c).error);
  }
  const auto all_attached = [&] {
    for (const auto& replica : replicas)
      if (replica->gateway.stats().attached <
              static_cast<uint64_t>(o.members) * static_cast<uint64_t>(o.per_replica) ||
          !replica->subscribed())
        return false;
    return true;
  };
  if (!wait_until(all_attached, kSetupTimeout))
    die("replicas did not register every session and bind their relay subscription in 30 s");
  std::printf("  %d sessions upgraded and registered in %.2f s; both relay subscriptions bound\n",
              sessions, std::chrono::duration<double>(Clock::now() - connect_start).count());

  // Statuses through a third replica's relay: the stream, each replica's consumer, the gateway.
  natsfleet::Relay publisher(publisher_fleet, {.name = kRelayName});
  std::atomic<uint64_t> retries{0};
  std::printf(
      "relay: natsfleet::Relay::publish (JetStream, stored ack) -> 2 replicas' relays -> "
      "WebSocket gateway -> Beast client\n");
  const PublishRun run = publish_paced(o.statuses, o.rate, o.publishers, [&](int i) {
    const int member = i % o.members;
    const std::string payload = status_payload(member, i, now_ns());
    const std::string msg_id = "status-" + std::to_string(i);
    const auto give_up = Clock::now() + kPublishGiveUp;
    // A publish the stream may or may not have stored is repeated with the same id: stored once.
    for (;;) {
      auto stored = publisher.publish(member_name(member), payload, msg_id,
                                      o.ordered ? static_cast<uint64_t>(i) + 1 : 0);
      if (stored) return;
      if (Clock::now() >= give_up)
        die("status " + std::to_string(i) + " never stored: " + stored.error().describe());
      retries++;
      std::this_thread::sleep_for(20ms);
    }
  });
  const uint64_t expected_frames =
      static_cast<uint64_t>(o.statuses) * static_cast<uint64_t>(sessions_per_member);
  const bool drained = wait_until(
      [&] { return progress.frames.load() >= expected_frames || progress.closed_early > 0; },
      kDrainTimeout);
  std::this_thread::sleep_for(kSettle);
  const uint64_t frames = progress.frames.load();
  print_publish_run(run, o.statuses, o.rate);
  if (retries > 0)
    std::printf("  publish retries: %llu\n", static_cast<unsigned long long>(retries));
  if (!drained)
    std::printf("  TIMEOUT: %llu of %llu frames arrived within 20 s of the last publish\n",
                static_cast<unsigned long long>(frames),
                static_cast<unsigned long long>(expected_frames));

  std::vector<natsfleet::RelayGatewayStats> gateway_stats;
  std::vector<natsfleet::RelayStats> relay_stats;
  for (const auto& replica : replicas) {
    gateway_stats.push_back(replica->gateway.stats());
    relay_stats.push_back(replica->relay.stats());
  }
  progress.stopping = true;  // from here a closed session is the gateway stopping
  for (auto& replica : replicas) replica->gateway.stop();
  pool.stop();

  std::vector<int64_t> latency_ns;
  latency_ns.reserve(expected_frames);
  int64_t last_frame_ns = run.start_ns;
  for (size_t c = 0; c < pool.size(); ++c) {
    const auto& r = pool.record(c);
    latency_ns.insert(latency_ns.end(), r.latency_ns.begin(), r.latency_ns.end());
    last_frame_ns = std::max(last_frame_ns, r.last_frame_ns);
  }
  const double window = static_cast<double>(last_frame_ns - run.start_ns) / 1e9;
  const Verdict verdict = check_sessions(pool, o);

  std::printf("\nper replica:\n");
  for (size_t r = 0; r < replicas.size(); ++r) {
    const auto& g = gateway_stats[r];
    const auto& s = relay_stats[r];
    std::printf(
        "  replica %c: relay received %llu, duplicates %llu, delivered %llu, dropped %llu, "
        "unrouted %llu; gateway attached %llu, frames sent %llu, dropped slow %llu, "
        "closed idle %llu, refused full %llu\n",
        static_cast<char>('a' + r), static_cast<unsigned long long>(s.received),
        static_cast<unsigned long long>(s.duplicates), static_cast<unsigned long long>(s.delivered),
        static_cast<unsigned long long>(s.dropped), static_cast<unsigned long long>(s.unrouted),
        static_cast<unsigned long long>(g.attached), static_cast<unsigned long long>(g.frames_sent),
        static_cast<unsigned long long>(g.dropped_slow),
        static_cast<unsigned long long>(g.closed_idle),
        static_cast<unsigned long long>(g.refused_full));
  }

  const Percentiles relay = percentiles(latency_ns);
  std::printf("\nlatency (steady clock, send time taken just before the publish call):\n");
  print_percentiles("baseline: core NATS publish->handler", baseline);
  print_percentiles("relay: publish->browser (WebSocket frame)", relay);
  print_percentiles("relay: publish() call (until stream ack)", percentiles(run.call_ns));
  if (baseline.p50_ms > 0 && baseline.p99_ms > 0)
    std::printf("  ratio relay/baseline: p50 %.2fx, p99 %.2fx\n", relay.p50_ms / baseline.p50_ms,
                relay.p99_ms / baseline.p99_ms);
  // Read the ratio with these in mind: the two paths flush differently, and a burst is queueing.
  std::printf(
      "  note: Fleet::publish is a buffered core publish that nats.c's flusher thread writes "
      "after waiting up to 1 ms for more; Relay::publish is a request, written at once\n");
  if (o.rate <= 0)
    std::printf(
        "  note: burst: every latency includes the wait behind the statuses published "
        "before it\n");
  std::printf("throughput: %.0f statuses/s, %.0f frames/s (first publish to last frame, %.2f s)\n",
              o.statuses / window, static_cast<double>(frames) / window, window);

  const bool pass = verdict.sessions_ok == sessions && frames == expected_frames;
  std::printf(
      "\nexactly-once per session: %s: %d of %d sessions got exactly their member's "
      "statuses; frames %llu of %llu; missing %llu, duplicates %llu, cross-member %llu, "
      "unreadable %llu, closed early %d\n",
      pass ? "PASS" : "FAIL", verdict.sessions_ok, sessions,
      static_cast<unsigned long long>(frames), static_cast<unsigned long long>(expected_frames),
      static_cast<unsigned long long>(verdict.missing),
      static_cast<unsigned long long>(verdict.duplicates),
      static_cast<unsigned long long>(verdict.foreign),
      static_cast<unsigned long long>(verdict.unreadable), verdict.closed_early);
  // With one publisher, statuses are stored in seq order; a replica's relay delivers in stream
  // order, so a session seeing seqs out of order would mean reordering past the stream.
  if (o.publishers == 1)
    std::printf("  sessions that saw their statuses out of publish order: %d\n",
                verdict.out_of_order);
  if (!pass && !verdict.first_problem.empty())
    std::printf("  first problem: %s\n", verdict.first_problem.c_str());
  std::printf("load average at end %s\n", load_average().c_str());

  publisher_fleet.shutdown(2s);
  for (auto& replica : replicas) replica->fleet.shutdown(2s);
  running_broker = nullptr;  // its destructor stops it
  return pass ? 0 : 2;
}
