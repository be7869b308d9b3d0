// The daemon measured as users run it (`natsfleet run` in its own process), each figure beside
// its target:
//   throughput with a file sink (fsync never) vs a raw nats.c fetch loop writing the same file,
//   and vs a nats.go fetch loop doing the same (bench/go/fetch_loop.go, when Go is installed)
//   idle memory (RSS) with 10 subscriptions
//   broker back -> first message handled, after an outage
//   survivor: new messages after the other replica is killed; the dead replica's in-flight work
//   per-key ordered work vs plain work: 1,000 keys, file sink, concurrency 16, 16 partitions
//
//   natsfleet-daemon-bench [--messages N] [--only throughput|recovery|ordered] [--logs DIR]
//   (--logs: each daemon's log copied to DIR when it stops)
#include <fcntl.h>
#include <nats/nats.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/child_process.h"
#include "broker/embedded_broker.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench: %s\n", what.c_str());
  std::exit(1);
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Admin {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  explicit Admin(const std::string& url) {
    natsOptions* o = nullptr;
    natsOptions_Create(&o);
    natsOptions_SetURL(o, url.c_str());
    natsOptions_SetMaxReconnect(o, -1);
    natsOptions_SetReconnectWait(o, 50);
    if (natsConnection_Connect(&nc, o) != NATS_OK) die("connect " + url);
    natsOptions_Destroy(o);
    natsConnection_JetStream(&js, nc, nullptr);
  }
  ~Admin() {
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
  void stream(const char* name, const char* subject) {
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    cfg.Name = name;
    const char* subjects[] = {subject};
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    jsStreamInfo* si = nullptr;
    jsErrCode err{};
    if (js_AddStream(&si, js, &cfg, nullptr, &err) != NATS_OK) die("add stream");
    jsStreamInfo_Destroy(si);
  }
  // Ack floor and delivered count of a consumer: cheap to poll, unlike reading a sink file.
  std::pair<uint64_t, uint64_t> progress(const char* stream, const char* consumer) {
    jsConsumerInfo* ci = nullptr;
    jsErrCode err{};
    if (js_GetConsumerInfo(&ci, js, stream, consumer, nullptr, &err) != NATS_OK) return {0, 0};
    std::pair<uint64_t, uint64_t> p{ci->AckFloor.Stream, ci->Delivered.Stream};
    jsConsumerInfo_Destroy(ci);
    return p;
  }
  void publish(const char* subject, int count, int size, const std::string& prefix = "m") {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    std::string payload(static_cast<size_t>(size), 'x');
    for (int i = 0; i < count; ++i) {
      std::string body = prefix + std::to_string(i) + payload;
      if (js_PublishAsync(js, subject, body.data(), static_cast<int>(body.size()), &po) != NATS_OK)
        die("publish");
    }
    if (js_PublishAsyncComplete(js, nullptr) != NATS_OK) die("publish complete");
  }
};

size_t count_lines(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// Where each daemon's log is copied when it stops (--logs); empty: not kept.
std::string g_keep_logs;

struct Daemon {
  natsfleet::base::ChildProcess process;
  std::string dir, name;
  Daemon(const std::string& d, const std::string& n, const std::string& config,
         const std::string& url)
      : dir(d), name(n) {
    std::ofstream(dir + "/" + name + ".toml") << config;
    auto started = natsfleet::base::ChildProcess::start(
        {NATSFLEET_CLI_BIN, "run", dir + "/" + name + ".toml", "--server", url},
        {.stderr_path = dir + "/" + name + ".log", .search_path = false});
    if (!started) die("spawn: " + started.error().describe());
    process = std::move(started.value());
  }
  ~Daemon() { stop(SIGTERM); }
  void stop(int sig) {
    if (process.pid() <= 0) return;
    process.signal(sig);
    process.wait();
    if (!g_keep_logs.empty())
      std::ofstream(g_keep_logs + "/" + name + ".log", std::ios::app)
          << std::ifstream(dir + "/" + name + ".log").rdbuf();
  }
  long rss_kib() const {
    std::ifstream in("/proc/" + std::to_string(process.pid()) + "/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
  }
};

std::string work_block(const std::string& name, const std::string& subject, const std::string& sink,
                       const std::string& extra = {}) {
  return "[[work]]\nname = \"" + name + "\"\nsubject = \"" + subject + "\"\n" + extra +
         "sink = { type = \"file\", path = \"" + sink + "\" }\n";
}

// This process's CPU time (user + system), in microseconds.
double own_cpu_us() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Another process's CPU time (user + system, from /proc), in microseconds.
double process_cpu_us(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name, which is in parentheses and may hold spaces.
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) {
      stime = std::stod(field);
      break;
    }
  }
  return (utime + stime) * 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Counts the lines of a file as it grows, reading only what was appended.
class LineCounter {
 public:
  explicit LineCounter(std::string path) : path_(std::move(path)) {}
  size_t count() {
    std::ifstream in(path_, std::ios::binary);
    if (!in) return lines_;
    in.seekg(static_cast<std::streamoff>(offset_));
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      const auto n = static_cast<size_t>(in.gcount());
      lines_ += static_cast<size_t>(std::count(buf, buf + n, '\n'));
      offset_ += n;
    }
    return lines_;
  }

 private:
  std::string path_;
  size_t offset_ = 0;
  size_t lines_ = 0;
};

struct Rate {
  double per_second = 0;
  double cpu_us_per_message = 0;
};

// The baseline: a raw nats.c fetch loop that writes each payload to a file, then acks it. Timed
// from the first message in hand to the last acked.
Rate raw_loop(Admin& admin, const std::string& file, int messages, int batch) {
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = "TP";
  so.Config.AckPolicy = js_AckExplicit;
  so.Config.MaxAckPending = 1000;
  natsSubscription* sub = nullptr;
  jsErrCode err{};
  const std::string durable = "raw" + std::to_string(batch);
  if (js_PullSubscribe(&sub, admin.js, "tp.jobs", durable.c_str(), nullptr, &so, &err) != NATS_OK)
    die("pull subscribe");
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  int got = 0;
  Clock::time_point start{};
  double cpu_start = 0;
  while (got < messages) {
    natsMsgList list{};
    natsStatus s = natsSubscription_Fetch(&list, sub, batch, 5000, &err);
    if (s != NATS_OK && s != NATS_TIMEOUT) die("fetch");
    if (got == 0 && list.Count > 0) {
      start = Clock::now();
      cpu_start = own_cpu_us();
    }
    for (int i = 0; i < list.Count; ++i) {
      std::string line(natsMsg_GetData(list.Msgs[i]), natsMsg_GetDataLength(list.Msgs[i]));
      line += '\n';
      if (::write(fd, line.data(), line.size()) < 0) die("write");
      natsMsg_Ack(list.Msgs[i], nullptr);
    }
    got += list.Count;
    natsMsgList_Destroy(&list);
  }
  natsConnection_Flush(admin.nc);
  ::close(fd);
  const Rate rate{(messages - 1) / seconds_since(start), (own_cpu_us() - cpu_start) / messages};
  natsSubscription_Unsubscribe(sub);
  natsSubscription_Destroy(sub);
  return rate;
}

// The nats.go baseline: bench/go/fetch_loop.go, built here (GOPATH mode, Debian's nats.go) and
// run as its own process; the same fetch, write and ack as raw_loop. Nothing when Go or nats.go
// is not installed (scripts/install-deps.sh brings both).
std::optional<Rate> go_loop(const std::string& url, const std::string& dir, const std::string& file,
                            int messages, int batch) {
  const std::string binary = dir + "/go-fetch-loop";
  const std::string build = "env GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=" + dir +
                            "/go-cache go build -o " + binary + " " NATSFLEET_BENCH_GO_LOOP + " >" +
                            dir + "/go-build.log 2>&1";
  if (std::system(build.c_str()) != 0) return std::nullopt;
  const std::string run = binary + " " + url + " TP tp.jobs go" + std::to_string(batch) + " " +
                          std::to_string(messages) + " " + std::to_string(batch) + " " + file;
  FILE* out = ::popen(run.c_str(), "r");
  if (out == nullptr) return std::nullopt;
  Rate rate;
  const int read = std::fscanf(out, "%lf %lf", &rate.per_second, &rate.cpu_us_per_message);
  if (::pclose(out) != 0 || read != 2) return std::nullopt;
  return rate;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

}  // namespace

int main(int argc, char** argv) {
  int messages = 100'000;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--messages")) messages = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
    if (!std::strcmp(argv[i], "--logs")) g_keep_logs = argv[i + 1];
  }
  auto runs = [&](const char* section) { return only.empty() || only == section; };
  natsfleet::EmbeddedBrokerOptions broker_options;
  broker_options.mappings = {{"ord.*", "ord.{{wildcard(1)}}.{{partition(16,1)}}"}};
  natsfleet::broker::EmbeddedBroker broker(broker_options);
  if (auto ok = broker.start(); !ok) die(ok.error().describe());
  const std::string dir = broker.state_dir();
  Admin admin(broker.url());

  // 1. Throughput.
  if (runs("throughput")) {
    admin.stream("TP", "tp.jobs");
    admin.publish("tp.jobs", messages, 100);
    std::printf(
        "throughput, %d messages of ~100 B, file sink (fsync never), ack each; load average at "
        "start %s:\n",
        messages, load_average().c_str());
    const Rate raw = raw_loop(admin, dir + "/raw.out", messages, 256);
    const Rate raw_1000 = raw_loop(admin, dir + "/raw1000.out", messages, 1000);
    std::printf(
        "  raw nats.c fetch loop + write(2), batch 256:  %8.0f msg/s  client CPU %5.2f us/msg\n",
        raw.per_second, raw.cpu_us_per_message);
    std::printf(
        "  raw nats.c fetch loop + write(2), batch 1000: %8.0f msg/s  client CPU %5.2f us/msg\n",
        raw_1000.per_second, raw_1000.cpu_us_per_message);
    const std::optional<Rate> go = go_loop(broker.url(), dir, dir + "/go.out", messages, 256);
    if (go)
      std::printf(
          "  nats.go fetch loop + write, batch 256:        %8.0f msg/s  client CPU %5.2f us/msg\n",
          go->per_second, go->cpu_us_per_message);
    else
      std::printf(
          "  nats.go fetch loop: not run (needs golang-go and "
          "golang-github-nats-io-go-nats-dev)\n");
    for (int concurrency : {1, 4}) {
      const std::string name = "tp-c" + std::to_string(concurrency);
      const std::string sink = dir + "/" + name + ".jsonl";
      Daemon d(dir, name,
               "name = \"" + name + "\"\n[health]\nlisten = \"127.0.0.1:0\"\n" +
                   work_block(name, "tp.jobs", sink,
                              "concurrency = " + std::to_string(concurrency) + "\n"),
               broker.url());
      // Timed from the first record in the sink file to the last: reading the file costs the
      // broker nothing, unlike polling the consumer's info.
      LineCounter lines(sink);
      while (lines.count() == 0) std::this_thread::sleep_for(200us);
      const auto start = Clock::now();
      const double cpu_start = process_cpu_us(d.process.pid());
      const size_t first = lines.count();
      while (lines.count() < static_cast<size_t>(messages)) std::this_thread::sleep_for(2ms);
      const double seconds = seconds_since(start);
      const double cpu = process_cpu_us(d.process.pid()) - cpu_start;
      const double handled = static_cast<double>(static_cast<size_t>(messages) - first);
      std::printf(
          "  natsfleet run, concurrency %d:                %8.0f msg/s  daemon CPU %5.2f us/msg   "
          "ratio %.2f to nats.c (target >= 1.0)",
          concurrency, handled / seconds, cpu / handled, handled / seconds / raw.per_second);
      if (go) std::printf(", %.2f to nats.go (target >= 0.9)", handled / seconds / go->per_second);
      std::printf("\n");
    }
  }

  // 2. Idle memory with 10 subscriptions.
  if (runs("recovery")) {
    std::string config = "name = \"idle\"\n[health]\nlisten = \"127.0.0.1:0\"\n";
    for (int i = 0; i < 10; ++i) {
      const std::string subject = "idle.s" + std::to_string(i);
      admin.stream(("IDLE" + std::to_string(i)).c_str(), subject.c_str());
      config += work_block("idle-" + std::to_string(i), subject,
                           dir + "/idle" + std::to_string(i) + ".jsonl");
    }
    Daemon d(dir, "idle", config, broker.url());
    std::this_thread::sleep_for(3s);
    std::printf("idle RSS, 10 work subscriptions: %ld KiB = %.1f MiB   (target <= 20 MiB)\n",
                d.rss_kib(), static_cast<double>(d.rss_kib()) / 1024.0);
  }

  // 3. Broker back -> first message handled.
  if (runs("recovery")) {
    admin.stream("OUT", "out.jobs");
    const std::string sink = dir + "/outage.jsonl";
    Daemon d(dir, "out",
             "name = \"out\"\n[health]\nlisten = \"127.0.0.1:0\"\n" +
                 work_block("out-daemon", "out.jobs", sink, "heartbeat = \"1s\"\n"),
             broker.url());
    admin.publish("out.jobs", 1, 10, "warm");
    while (count_lines(sink) < 1) std::this_thread::sleep_for(5ms);
    broker.kill();
    std::this_thread::sleep_for(5s);
    if (auto ok = broker.start(); !ok) die(ok.error().describe());
    const auto back = Clock::now();
    admin.publish("out.jobs", 1, 10, "after");
    while (count_lines(sink) < 2) std::this_thread::sleep_for(2ms);
    std::printf(
        "broker back after a 5 s outage -> first message handled: %.2f s   (target <= 2 s)\n",
        seconds_since(back));
  }

  // 4. Survivor: new messages, and the dead replica's in-flight messages.
  if (runs("recovery")) {
    admin.stream("SV", "sv.jobs");
    const std::string a_sink = dir + "/sv-a.jsonl", b_sink = dir + "/sv-b.jsonl";
    const std::string extra = "ack_wait = \"5s\"\nheartbeat = \"1s\"\nconcurrency = 4\n";
    Daemon a(dir, "sva",
             "name = \"sva\"\n[health]\nlisten = \"127.0.0.1:0\"\n" +
                 work_block("sv", "sv.jobs", a_sink, extra),
             broker.url());
    Daemon b(dir, "svb",
             "name = \"svb\"\n[health]\nlisten = \"127.0.0.1:0\"\n" +
                 work_block("sv", "sv.jobs", b_sink, extra),
             broker.url());
    std::this_thread::sleep_for(2s);
    // b hangs with messages in hand, then dies.
    b.process.signal(SIGSTOP);
    admin.publish("sv.jobs", 200, 10, "held");
    std::this_thread::sleep_for(200ms);
    const size_t a_before = count_lines(a_sink);
    b.stop(SIGKILL);
    const auto killed = Clock::now();
    admin.publish("sv.jobs", 1, 10, "fresh");
    auto has_fresh = [&] {
      std::ifstream in(a_sink);
      for (std::string line; std::getline(in, line);)
        if (line.find("\"fresh0") != std::string::npos) return true;
      return false;
    };
    while (!has_fresh()) std::this_thread::sleep_for(2ms);
    const double fresh = seconds_since(killed);
    while (count_lines(a_sink) < 201) std::this_thread::sleep_for(5ms);  // 200 held + fresh
    const double held = seconds_since(killed);
    std::printf(
        "survivor, other replica killed: new message handled after %.2f s   (target <= 1 s)\n",
        fresh);
    std::printf(
        "survivor: the dead replica's %zu in-flight messages all handled after %.2f s   "
        "(target <= ack_wait 5 s + 1 s)\n",
        static_cast<size_t>(200 - a_before), held);
  }
  // 5. Per-key ordered work against plain work: the same messages, the same daemon config but
  // for the ordering keys.
  if (runs("ordered")) {
    admin.stream("ORD", "ord.*.*");
    std::printf(
        "per-key ordered vs plain, %d messages over 1,000 keys, file sink, concurrency 16, "
        "16 partitions:\n",
        messages);
    double rates[2] = {0, 0};
    for (int ordered = 0; ordered < 2; ++ordered) {
      const std::string name = ordered ? "ord-keyed" : "ord-plain";
      const std::string sink = dir + "/" + name + ".jsonl";
      {
        jsErrCode err{};
        js_PurgeStream(admin.js, "ORD", nullptr, &err);
        jsPubOptions po;
        jsPubOptions_Init(&po);
        const std::string body(100, 'x');
        for (int i = 0; i < messages; ++i) {
          const std::string subject = "ord.k" + std::to_string(i % 1000);
          if (js_PublishAsync(admin.js, subject.c_str(), body.data(), 100, &po) != NATS_OK)
            die("publish");
        }
        if (js_PublishAsyncComplete(admin.js, nullptr) != NATS_OK) die("publish complete");
      }
      const std::string extra =
          ordered ? "concurrency = 16\nordering = \"per-key\"\nkey_token = 2\npartitions = 16\n"
                  : "concurrency = 16\nstream = \"ORD\"\n";
      Daemon d(dir, name,
               "name = \"" + name + "\"\n[health]\nlisten = \"127.0.0.1:0\"\n" +
                   work_block(name, ordered ? "ord.*" : "ord.*.*", sink, extra),
               broker.url());
      LineCounter lines(sink);
      while (lines.count() == 0) std::this_thread::sleep_for(200us);
      const auto start = Clock::now();
      const size_t first = lines.count();
      while (lines.count() < static_cast<size_t>(messages)) std::this_thread::sleep_for(2ms);
      rates[ordered] =
          static_cast<double>(static_cast<size_t>(messages) - first) / seconds_since(start);
      std::printf("  %s: %8.0f msg/s\n", ordered ? "per-key ordered" : "plain          ",
                  rates[ordered]);
    }
    std::printf("  ratio per-key / plain %.2f   (target >= 0.5)\n", rates[1] / rates[0]);
  }

  return 0;
}
