// Consumption throughput: natsfleet's work subscription (its defaults: the window sized by the
// engine) against raw nats.c fetch loops with batches of 256 and 1,000, same broker, same stream,
// same run. Each side consumes every message of the stream through its own durable consumer and
// acks each one. Prints the rates, their ratios and the client CPU each spent per message (this
// process's user + system time; the broker is another process). Then the handler latency of a
// natsfleet consumer and of the raw loop, both fed at half the rate natsfleet reaches when it
// handles what is being published: p50 and p99 from publish to handler.
//
//   natsfleet-bench [--messages N] [--size BYTES] [--rounds R] [--only natsfleet|raw|per-key]
//                   [--server URL]
//
// --only runs one side's rounds and skips the latency run: for `perf record` of one side;
// --only per-key runs the per-key order sections alone (on the embedded broker): ordering on vs
// off at 10, 100 and 1,000 keys (and 1,000 with a 2 ms handler), and the handover when a replica
// owning every partition is
// killed (it runs as a child of this process: natsfleet-bench --hold URL) and when one joins.
// --server uses a running broker (with no stream named BENCH or LATENCY_*) instead of starting
// one, so that `perf stat` counts this process alone.
//
// This is the only place outside src/nats/ that includes nats.c: it is the baseline.
#include <nats/nats.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/child_process.h"
#include "broker/embedded_broker.h"
#include "natsfleet/fleet.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* kStream = "BENCH";
constexpr const char* kSubject = "bench.jobs";
constexpr const char* kLatencyStream = "LATENCY";
constexpr const char* kLatencySubject = "bench.latency";

[[noreturn]] void die(const char* what, natsStatus s) {
  std::fprintf(stderr, "bench: %s: %s\n", what, natsStatus_GetText(s));
  std::exit(1);
}

// This process's CPU time (user + system), in microseconds.
double cpu_us() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Context switches of this process's threads so far, voluntary or not: each is a thread that
// slept and was woken, or was preempted.
double switches() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_nvcsw + u.ru_nivcsw);
}

// A rate and what it cost this process, measured over the same span.
struct Rate {
  double per_second = 0;
  double cpu_us_per_message = 0;
  double switches_per_1000 = 0;  // context switches per 1,000 messages
};

// Starts at the first message in hand, stops at the last: binding and the first request's round
// trip are not throughput, for either side.
class Span {
 public:
  void begin() {
    start_ = Clock::now();
    cpu_start_ = cpu_us();
    switches_start_ = switches();
  }
  Rate end(int messages) const {
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    return {messages / seconds, (cpu_us() - cpu_start_) / messages,
            (switches() - switches_start_) * 1000.0 / messages};
  }

 private:
  Clock::time_point start_;
  double cpu_start_ = 0;
  double switches_start_ = 0;
};

struct Connection {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  explicit Connection(const std::string& url) {
    if (auto s = natsConnection_ConnectTo(&nc, url.c_str()); s != NATS_OK) die("connect", s);
    natsConnection_JetStream(&js, nc, nullptr);
  }
  ~Connection() {
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
};

void add_stream(jsCtx* js, const char* name, const char* subject) {
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = name;
  const char* subjects[] = {subject};
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 1;
  cfg.Storage = js_MemoryStorage;
  jsStreamInfo* si = nullptr;
  jsErrCode jerr{};
  if (auto s = js_AddStream(&si, js, &cfg, nullptr, &jerr); s != NATS_OK) die("add stream", s);
  jsStreamInfo_Destroy(si);
}

// Messages the stream holds now.
uint64_t stored(jsCtx* js, const char* stream) {
  jsStreamInfo* si = nullptr;
  jsErrCode jerr{};
  if (auto s = js_GetStreamInfo(&si, js, stream, nullptr, &jerr); s != NATS_OK)
    die("stream info", s);
  const uint64_t held = si->State.Msgs;
  jsStreamInfo_Destroy(si);
  return held;
}

// Fills the stream until it holds `messages`: an asynchronous publish the broker did not store
// (nats.c reports it to an error handler only) is made up for, so every round's count is there.
void fill_stream(const std::string& url, int messages, int size) {
  Connection c(url);
  add_stream(c.js, kStream, kSubject);
  std::string payload(static_cast<size_t>(size), 'x');
  jsPubOptions po;
  jsPubOptions_Init(&po);
  const auto wanted = static_cast<uint64_t>(messages);
  for (int attempt = 1;; ++attempt) {
    const uint64_t held = stored(c.js, kStream);
    if (held >= wanted) return;
    if (attempt > 5) {
      std::fprintf(stderr, "bench: the stream holds %llu of %d messages after 5 fills\n",
                   static_cast<unsigned long long>(held), messages);
      std::exit(1);
    }
    if (attempt > 1)
      std::printf("the broker stored %llu of %d messages; publishing the rest again\n",
                  static_cast<unsigned long long>(held), messages);
    for (uint64_t i = held; i < wanted; ++i) {
      if (auto s = js_PublishAsync(c.js, kSubject, payload.data(), size, &po); s != NATS_OK)
        die("publish", s);
    }
    if (auto s = js_PublishAsyncComplete(c.js, nullptr); s != NATS_OK) die("publish complete", s);
  }
}

// The baseline: what an application writes with nats.c alone, a synchronous fetch loop.
Rate raw_fetch_loop(const std::string& url, int messages, int batch, const std::string& durable) {
  Connection c(url);
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = kStream;
  so.Config.AckPolicy = js_AckExplicit;
  so.Config.MaxAckPending = std::max(1000, batch);
  natsSubscription* sub = nullptr;
  jsErrCode jerr{};
  if (auto s = js_PullSubscribe(&sub, c.js, kSubject, durable.c_str(), nullptr, &so, &jerr);
      s != NATS_OK)
    die("pull subscribe", s);
  Span span;
  int got = 0;
  while (got < messages) {
    natsMsgList list{};
    natsStatus s = natsSubscription_Fetch(&list, sub, batch, 5000, &jerr);
    if (s != NATS_OK && s != NATS_TIMEOUT) die("fetch", s);
    if (got == 0 && list.Count > 0) span.begin();
    for (int i = 0; i < list.Count; ++i) natsMsg_Ack(list.Msgs[i], nullptr);
    got += list.Count;
    natsMsgList_Destroy(&list);
  }
  natsConnection_Flush(c.nc);
  const Rate rate = span.end(messages - 1);
  natsSubscription_Unsubscribe(sub);  // deletes the consumer it created: fine for a bench
  natsSubscription_Destroy(sub);
  return rate;
}

natsfleet::WorkSpec work_spec(const std::string& name, const char* stream, const char* subject) {
  natsfleet::WorkSpec spec;
  spec.name = name;
  spec.subject = subject;
  spec.stream = stream;
  spec.flow.max_ack_pending = 1000;  // as the raw loops' consumers
  return spec;
}

Rate natsfleet_consume(const std::string& url, int messages, const std::string& durable) {
  natsfleet::Fleet fleet({.name = "bench", .servers = {url}});
  std::atomic<int> got{0};
  Span span;
  (void)fleet.add_work(work_spec(durable, kStream, kSubject), [&](const natsfleet::Message&) {
    const int n = got.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n == 1) span.begin();
    if (n == messages) got.notify_all();
    return natsfleet::Disposition::ack();
  });
  if (!fleet.start()) std::exit(1);
  for (int n = got.load(); n < messages; n = got.load()) got.wait(n);
  const Rate rate = span.end(messages - 1);
  fleet.shutdown(5s);
  return rate;
}

// Publish -> handler latencies, in milliseconds: the payload starts with its send time.
class Latencies {
 public:
  explicit Latencies(int expected) : expected_(expected) { ms_.reserve(expected); }
  void record(const char* data) {
    const double sent_us = std::strtod(data, nullptr);
    const double now_us = std::chrono::duration<double, std::micro>(Clock::now() - epoch_).count();
    {
      std::lock_guard lock(mu_);
      ms_.push_back((now_us - sent_us) / 1000.0);
    }
    if (got_.fetch_add(1) + 1 == expected_) got_.notify_all();
  }
  double now_us() const {
    return std::chrono::duration<double, std::micro>(Clock::now() - epoch_).count();
  }
  int got() const { return got_.load(); }
  void wait_all() {
    for (int n = got_.load(); n < expected_; n = got_.load()) got_.wait(n);
  }
  std::vector<double> ms() {
    std::lock_guard lock(mu_);
    return ms_;
  }

 private:
  const int expected_;
  const Clock::time_point epoch_ = Clock::now();
  std::mutex mu_;
  std::vector<double> ms_;
  std::atomic<int> got_{0};
};

// Publishes `count` stamped messages at `rate` per second (as fast as the broker takes them
// when `rate` is 0), from one thread.
void publish_paced(jsCtx* js, const char* subject, double rate, int count, Latencies& stamps) {
  jsPubOptions po;
  jsPubOptions_Init(&po);
  const auto interval = std::chrono::duration<double>(rate > 0 ? 1.0 / rate : 0.0);
  const auto start = Clock::now();
  std::string body(128, 'x');
  for (int i = 0; i < count; ++i) {
    if (rate > 0)
      std::this_thread::sleep_until(start +
                                    std::chrono::duration_cast<Clock::duration>(interval * i));
    const std::string stamp = std::to_string(stamps.now_us());
    body.replace(0, stamp.size() + 1, stamp + " ");
    if (auto s = js_PublishAsync(js, subject, body.data(), static_cast<int>(body.size()), &po);
        s != NATS_OK)
      die("publish", s);
  }
  if (auto s = js_PublishAsyncComplete(js, nullptr); s != NATS_OK) die("publish complete", s);
}

// Publish -> handler latencies, and the rate at which messages went through (from the first
// publish to the last handler call).
struct Pipeline {
  std::vector<double> ms;
  double per_second = 0;
};

// A natsfleet work subscription fed at `rate` messages/s (0: as fast as the broker takes them),
// on a stream of its own named after `tag`.
Pipeline natsfleet_latency(const std::string& url, const std::string& tag, double rate, int count) {
  Connection c(url);
  const std::string stream = std::string(kLatencyStream) + "_" + tag;
  const std::string subject = std::string(kLatencySubject) + "." + tag;
  add_stream(c.js, stream.c_str(), subject.c_str());
  Latencies latencies(count);
  natsfleet::Fleet fleet({.name = "bench-latency", .servers = {url}});
  (void)fleet.add_work(work_spec("latency", stream.c_str(), subject.c_str()),
                       [&](const natsfleet::Message& m) {
                         latencies.record(m.data().c_str());
                         return natsfleet::Disposition::ack();
                       });
  if (!fleet.start()) std::exit(1);
  while (!fleet.health().ready) std::this_thread::sleep_for(10ms);
  const auto start = Clock::now();
  publish_paced(c.js, subject.c_str(), rate, count, latencies);
  latencies.wait_all();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  fleet.shutdown(5s);
  return {latencies.ms(), count / seconds};
}

// The same for the raw fetch loop (batch 256), on a stream of its own.
std::vector<double> raw_latency(const std::string& url, double rate, int count) {
  Connection c(url);
  add_stream(c.js, "LATENCY_RAW", "bench.latency-raw");
  Latencies latencies(count);
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = "LATENCY_RAW";
  so.Config.AckPolicy = js_AckExplicit;
  so.Config.MaxAckPending = 1000;
  natsSubscription* sub = nullptr;
  jsErrCode jerr{};
  if (auto s =
          js_PullSubscribe(&sub, c.js, "bench.latency-raw", "latency-raw", nullptr, &so, &jerr);
      s != NATS_OK)
    die("pull subscribe", s);
  std::thread consumer([&] {
    while (latencies.got() < count) {
      natsMsgList list{};
      natsStatus s = natsSubscription_Fetch(&list, sub, 256, 500, &jerr);
      if (s != NATS_OK && s != NATS_TIMEOUT) die("fetch", s);
      for (int i = 0; i < list.Count; ++i) {
        latencies.record(natsMsg_GetData(list.Msgs[i]));
        natsMsg_Ack(list.Msgs[i], nullptr);
      }
      natsMsgList_Destroy(&list);
    }
  });
  Connection publisher(url);
  publish_paced(publisher.js, "bench.latency-raw", rate, count, latencies);
  consumer.join();
  natsSubscription_Destroy(sub);
  return latencies.ms();
}

// Per-key order on and off over the same messages: bench.ord.<run>.k<i % keys>, which the
// embedded broker maps to 16 partitions. Both sides run 16 handlers.
constexpr const char* kOrderedStream = "ORDERED";
constexpr const char* kOrderedSource = "bench.ord.*.*";  // bench.ord.<run>.<key>
constexpr int kOrderedKeyToken = 4;
constexpr int kOrderedPartitions = 16;
constexpr std::chrono::milliseconds kHandoverLease{5000};

std::string ordered_destination() {
  return "bench.ord.{{wildcard(1)}}.{{wildcard(2)}}.{{partition(" +
         std::to_string(kOrderedPartitions) + ",2)}}";
}

// An ordered work on the mapped subjects, as the embedded broker partitions them.
natsfleet::WorkSpec ordered_spec(const std::string& name) {
  natsfleet::WorkSpec spec;
  spec.name = name;
  spec.stream = kOrderedStream;
  spec.subject = kOrderedSource;
  spec.per_key.emplace();
  spec.per_key->key_token = kOrderedKeyToken;
  spec.per_key->partitions = kOrderedPartitions;
  return spec;
}

Rate keyed_consume(const std::string& url, const std::string& run, int keys, int messages,
                   bool ordered, std::chrono::milliseconds handle = {}) {
  {
    Connection c(url);
    jsErrCode jerr{};
    // Only this run's messages: an ordered work reads every run's subjects.
    if (auto s = js_PurgeStream(c.js, kOrderedStream, nullptr, &jerr); s != NATS_OK)
      die("purge", s);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    const std::string body(128, 'x');
    for (int i = 0; i < messages; ++i) {
      const std::string subject = "bench.ord." + run + ".k" + std::to_string(i % keys);
      if (auto s = js_PublishAsync(c.js, subject.c_str(), body.data(), 128, &po); s != NATS_OK)
        die("publish", s);
    }
    if (auto s = js_PublishAsyncComplete(c.js, nullptr); s != NATS_OK) die("publish complete", s);
  }
  natsfleet::FleetOptions options{.name = "bench-keyed", .servers = {url}};
  options.missing_window = 100ms;  // a new consumer on a stream holding messages: no long wait
  natsfleet::Fleet fleet(options);
  natsfleet::WorkSpec spec;
  if (ordered) {
    spec = ordered_spec(run + "-ordered");
  } else {
    spec.name = run + "-plain";
    spec.stream = kOrderedStream;
    spec.subject = "bench.ord." + run + ".*.*";  // the stored subjects: <run>.<key>.<partition>
  }
  spec.flow.heartbeat = 500ms;
  spec.flow.concurrency = 16;
  std::atomic<int> got{0};
  Span span;
  auto added = fleet.add_work(spec, [&](const natsfleet::Message&) {
    if (handle.count() > 0) std::this_thread::sleep_for(handle);
    const int n = got.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n == 1) span.begin();
    if (n == messages) got.notify_all();
    return natsfleet::Disposition::ack();
  });
  if (!added) {
    std::fprintf(stderr, "bench: %s\n", added.error().describe().c_str());
    std::exit(1);
  }
  if (!fleet.start()) std::exit(1);
  for (int n = got.load(); n < messages; n = got.load()) got.wait(n);
  const Rate rate = span.end(messages - 1);
  fleet.shutdown(5s);
  return rate;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

struct Side {
  const char* label;
  std::vector<Rate> rounds;
  double rate() const {
    std::vector<double> v;
    for (const auto& r : rounds) v.push_back(r.per_second);
    return median(v);
  }
  double cpu() const {
    std::vector<double> v;
    for (const auto& r : rounds) v.push_back(r.cpu_us_per_message);
    return median(v);
  }
  double switches() const {
    std::vector<double> v;
    for (const auto& r : rounds) v.push_back(r.switches_per_1000);
    return median(v);
  }
};

// Per-key order against plain work over the same messages, at three key counts, and with a
// handler that takes 2 ms (where plain work's 16 handlers and the lanes of 1,000 keys both run).
void per_key_section(const std::string& server, int messages) {
  {
    Connection c(server);
    add_stream(c.js, kOrderedStream, "bench.ord.*.*.*");
  }
  std::printf("per-key order on and off, %d messages each, 16 partitions, 16 handlers:\n",
              messages);
  auto row = [&](int keys, int count, std::chrono::milliseconds handle) {
    const std::string run = "k" + std::to_string(keys) + "h" + std::to_string(handle.count());
    const Rate plain = keyed_consume(server, run + "p", keys, count, false, handle);
    const Rate ordered = keyed_consume(server, run + "o", keys, count, true, handle);
    std::printf(
        "  %5d keys, %s handler, %6d messages: plain %8.0f msg/s, per-key order %8.0f "
        "msg/s, ratio %.2f\n",
        keys, handle.count() ? "2 ms   " : "no-op  ", count, plain.per_second, ordered.per_second,
        ordered.per_second / plain.per_second);
  };
  for (int keys : {10, 100, 1000}) row(keys, messages, {});
  row(1000, std::max(messages / 5, 1000), 2ms);
}

// The ordered work of the handover measurement, the same in the holding child and here.
natsfleet::WorkSpec handover_spec() {
  natsfleet::WorkSpec spec = ordered_spec("handover");
  spec.flow.concurrency = kOrderedPartitions;
  spec.per_key->lease = kHandoverLease;
  return spec;
}

// The child's side (--hold URL): takes one message of every partition and never answers, so that
// they are all in flight when it is killed.
int hold_partitions(const std::string& url) {
  natsfleet::FleetOptions options{.name = "bench-holder", .servers = {url}};
  options.missing_window = 100ms;
  natsfleet::Fleet fleet(options);
  auto added = fleet.add_work(handover_spec(), [](const natsfleet::Message&) {
    for (;;) std::this_thread::sleep_for(1h);
    return natsfleet::Disposition::ack();
  });
  if (!added || !fleet.start()) return 1;
  for (;;) std::this_thread::sleep_for(1h);
}

// The partition a stored subject (bench.ord.<run>.<key>.<partition>) names.
int partition_of_subject(const std::string& subject) {
  return std::atoi(subject.c_str() + subject.rfind('.') + 1);
}

// Every partition has an owner that read messages of it: its reader consumer
// (handover-p<p>-e<epoch>g<n>) has deliveries awaiting their ack.
bool every_partition_held(jsCtx* js) {
  jsConsumerNamesList* names = nullptr;
  jsErrCode jerr{};
  if (js_ConsumerNames(&names, js, kOrderedStream, nullptr, &jerr) != NATS_OK) return false;
  std::set<int> held;
  for (int i = 0; i < names->Count; ++i) {
    const std::string name = names->List[i];
    if (name.rfind("handover-p", 0) != 0) continue;
    jsConsumerInfo* ci = nullptr;
    if (js_GetConsumerInfo(&ci, js, kOrderedStream, name.c_str(), nullptr, &jerr) != NATS_OK)
      continue;
    if (ci->NumAckPending > 0) held.insert(std::atoi(name.c_str() + std::strlen("handover-p")));
    jsConsumerInfo_Destroy(ci);
  }
  jsConsumerNamesList_Destroy(names);
  return static_cast<int>(held.size()) == kOrderedPartitions;
}

// Handover, ordered work: a replica holding a message of every partition is killed (SIGKILL);
// how long until a survivor handles each partition's message. Then a replica joins the survivor
// on a backlog: how long until it handles its first message, and its share.
void handover_section(const std::string& server, const char* self) {
  Connection c(server);
  jsErrCode jerr{};
  if (auto st = js_PurgeStream(c.js, kOrderedStream, nullptr, &jerr); st != NATS_OK)
    die("purge", st);
  const auto publish = [&](int count, const std::string& run) {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    const std::string body(128, 'x');
    for (int i = 0; i < count; ++i) {
      const std::string subject = "bench.ord." + run + ".k" + std::to_string(i % 1000);
      if (auto st = js_PublishAsync(c.js, subject.c_str(), body.data(), 128, &po); st != NATS_OK)
        die("publish", st);
    }
    if (auto st = js_PublishAsyncComplete(c.js, nullptr); st != NATS_OK)
      die("publish complete", st);
  };
  publish(2000, "ho");  // 1,000 keys: every partition has messages
  auto holder =
      natsfleet::base::ChildProcess::start({self, "--hold", server}, {.stdin_path = "/dev/null",
                                                                      .stdout_path = "/dev/null",
                                                                      .stderr_to_stdout = true,
                                                                      .search_path = false});
  if (!holder) {
    std::fprintf(stderr, "bench: %s\n", holder.error().describe().c_str());
    std::exit(1);
  }
  while (!every_partition_held(c.js)) std::this_thread::sleep_for(20ms);

  std::mutex mu;
  std::condition_variable cv;
  std::vector<double> first_after_kill(kOrderedPartitions, -1);
  int partitions_back = 0;
  std::atomic<int> survivor_handled{0}, joiner_handled{0};
  std::atomic<bool> slow{false};
  Clock::time_point killed_at{}, joined_at{}, joiner_first{};
  natsfleet::FleetOptions options{.name = "bench-survivor", .servers = {server}};
  options.missing_window = 100ms;
  natsfleet::Fleet survivor(options);
  (void)survivor.add_work(handover_spec(), [&](const natsfleet::Message& m) {
    survivor_handled.fetch_add(1, std::memory_order_relaxed);
    if (slow.load()) std::this_thread::sleep_for(2ms);
    std::lock_guard lock(mu);
    double& first = first_after_kill[static_cast<size_t>(partition_of_subject(m.subject()))];
    if (first < 0 && killed_at != Clock::time_point{}) {
      first = std::chrono::duration<double>(Clock::now() - killed_at).count();
      ++partitions_back;
      cv.notify_all();
    }
    return natsfleet::Disposition::ack();
  });
  if (!survivor.start()) std::exit(1);
  std::this_thread::sleep_for(500ms);  // bound and pulling: nothing to take, all are held
  {
    std::lock_guard lock(mu);
    killed_at = Clock::now();
  }
  holder->kill();
  {
    std::unique_lock lock(mu);
    cv.wait_for(lock, 60s, [&] { return partitions_back == kOrderedPartitions; });
  }
  std::vector<double> back;
  for (double t : first_after_kill)
    if (t >= 0) back.push_back(t);
  const double target = std::chrono::duration<double>(kHandoverLease + 1s).count();
  std::printf(
      "per-key handover, %d partitions, lease %.1f s:\n"
      "  replica killed owning every partition: %zu of %d partitions handled again by the "
      "survivor, median %.2f s, last %.2f s after the kill   (target <= %.1f s)\n",
      kOrderedPartitions, std::chrono::duration<double>(kHandoverLease).count(), back.size(),
      kOrderedPartitions, back.empty() ? -1.0 : median(back),
      back.empty() ? -1.0 : *std::max_element(back.begin(), back.end()), target);

  // A backlog the survivor alone takes seconds over; a second replica joins it.
  while (survivor_handled.load() < 2000) std::this_thread::sleep_for(20ms);
  slow = true;
  const int before_join = survivor_handled.load();
  publish(20000, "join");
  options.name = "bench-joiner";
  natsfleet::Fleet joiner(options);
  (void)joiner.add_work(handover_spec(), [&](const natsfleet::Message&) {
    if (joiner_handled.fetch_add(1) == 0) {
      std::lock_guard lock(mu);
      joiner_first = Clock::now();
      cv.notify_all();
    }
    std::this_thread::sleep_for(2ms);
    return natsfleet::Disposition::ack();
  });
  joined_at = Clock::now();
  if (!joiner.start()) std::exit(1);
  {
    std::unique_lock lock(mu);
    cv.wait_for(lock, 60s, [&] { return joiner_first != Clock::time_point{}; });
  }
  while (survivor_handled.load() - before_join + joiner_handled.load() < 20000)
    std::this_thread::sleep_for(20ms);
  std::printf(
      "  replica joining a backlog of 20,000: first message handled %.2f s after start; it "
      "handled %d, the survivor %d\n",
      joiner_first == Clock::time_point{}
          ? -1.0
          : std::chrono::duration<double>(joiner_first - joined_at).count(),
      joiner_handled.load(), survivor_handled.load() - before_join);
  joiner.shutdown(5s);
  survivor.shutdown(5s);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && !std::strcmp(argv[1], "--hold")) return hold_partitions(argv[2]);
  int messages = 100'000, size = 128, rounds = 3;
  std::string only, server;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--messages"))
      messages = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--size"))
      size = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--only"))
      only = argv[i + 1];
    else if (!std::strcmp(argv[i], "--server"))
      server = argv[i + 1];
  }
  const std::string load = load_average();
  natsfleet::EmbeddedBrokerOptions broker_options;
  broker_options.mappings = {{kOrderedSource, ordered_destination()}};
  natsfleet::broker::EmbeddedBroker embedded(broker_options);
  const bool own_broker = server.empty();
  if (server.empty()) {
    if (auto started = embedded.start(); !started) {
      std::fprintf(stderr, "bench: %s\n", started.error().describe().c_str());
      return 1;
    }
    server = embedded.url();
  }
  if (only == "per-key") {
    per_key_section(server, messages);
    handover_section(server, "/proc/self/exe");
    return 0;
  }
  fill_stream(server, messages, size);
  std::printf(
      "consume %d messages of %d bytes, ack each, %d rounds (median), broker %s, load average "
      "at start %s\n",
      messages, size, rounds, server.c_str(), load.c_str());
  Side raw{"raw nats.c fetch loop, batch 256"}, raw_1000{"raw nats.c fetch loop, batch 1000"},
      fleet{"natsfleet work subscription"};
  for (int r = 0; r < rounds; ++r) {
    const std::string n = std::to_string(r);
    if (only == "natsfleet") {
      const Rate rate = natsfleet_consume(server, messages, "fleet-" + n);
      std::printf(
          "  round %d: natsfleet %.0f msg/s, client CPU %.2f us/msg, %.0f switches per "
          "1,000\n",
          r + 1, rate.per_second, rate.cpu_us_per_message, rate.switches_per_1000);
      continue;
    }
    if (only == "raw") {
      const Rate rate = raw_fetch_loop(server, messages, 256, "raw-" + n);
      std::printf(
          "  round %d: raw/256 %.0f msg/s, client CPU %.2f us/msg, %.0f switches per "
          "1,000\n",
          r + 1, rate.per_second, rate.cpu_us_per_message, rate.switches_per_1000);
      continue;
    }
    raw.rounds.push_back(raw_fetch_loop(server, messages, 256, "raw-" + n));
    raw_1000.rounds.push_back(raw_fetch_loop(server, messages, 1000, "raw1000-" + n));
    fleet.rounds.push_back(natsfleet_consume(server, messages, "fleet-" + n));
    std::printf("  round %d: raw/256 %.0f msg/s, raw/1000 %.0f msg/s, natsfleet %.0f msg/s\n",
                r + 1, raw.rounds.back().per_second, raw_1000.rounds.back().per_second,
                fleet.rounds.back().per_second);
  }
  if (!only.empty()) return 0;
  for (const Side* side : {&raw, &raw_1000, &fleet})
    std::printf("%-36s %8.0f msg/s  client CPU %5.2f us/msg  %4.0f switches per 1,000\n",
                side->label, side->rate(), side->cpu(), side->switches());
  std::printf("client CPU natsfleet/raw batch 256: %.2f   (target <= 1.0)\n",
              fleet.cpu() / raw.cpu());
  std::printf("ratio natsfleet/raw: %.2f   (target >= 1.2)\n", fleet.rate() / raw.rate());
  std::printf("ratio natsfleet/raw batch 1000: %.2f   (target >= 1.0)\n",
              fleet.rate() / raw_1000.rate());

  // The maximum here is what natsfleet handles while the same broker also stores what is
  // published meanwhile (the consume-only rate above would saturate it); both sides are then
  // fed at half of that.
  const int burst = std::max(messages / 2, 1000);
  const double maximum = natsfleet_latency(server, "max", 0, burst).per_second;
  const double paced = maximum / 2;
  const int count = std::max(static_cast<int>(paced * 5), 1000);
  std::printf(
      "publish and handle at once, unpaced: %.0f msg/s through natsfleet (%d messages)\n"
      "handler latency at %.0f msg/s (half that), publish -> handler, %d messages each:\n",
      maximum, burst, paced, count);
  const auto show = [](const char* label, const std::vector<double>& ms) {
    std::printf("  %-30s p50 %8.3f ms  p99 %8.3f ms  max %8.3f ms\n", label, percentile(ms, 0.50),
                percentile(ms, 0.99), percentile(ms, 1.0));
  };
  show("raw nats.c fetch loop, 256", raw_latency(server, paced, count));
  show("natsfleet work subscription", natsfleet_latency(server, "paced", paced, count).ms);

  // A broker of its own carries the partition mapping.
  if (own_broker) {
    per_key_section(server, messages);
    handover_section(server, "/proc/self/exe");
  }
  return 0;
}
