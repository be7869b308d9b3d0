// Consumption throughput: natsfleet's pull engine against a raw nats.c fetch loop, same broker,
// same stream, same run. Each side consumes every message of the stream through its own durable
// consumer and acks each one. Prints both rates and their ratio (natsfleet / raw).
//
//   natsfleet-bench [--messages N] [--size BYTES] [--rounds R]
//
// This is the only place outside src/nats/ that includes nats.c: it is the baseline.
#include <nats/nats.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "broker/embedded_broker.h"
#include "natsfleet/fleet.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* kStream = "BENCH";
constexpr const char* kSubject = "bench.jobs";

[[noreturn]] void die(const char* what, natsStatus s) {
  std::fprintf(stderr, "bench: %s: %s\n", what, natsStatus_GetText(s));
  std::exit(1);
}

void fill_stream(const std::string& url, int messages, int size) {
  natsConnection* nc = nullptr;
  if (auto s = natsConnection_ConnectTo(&nc, url.c_str()); s != NATS_OK) die("connect", s);
  jsCtx* js = nullptr;
  natsConnection_JetStream(&js, nc, nullptr);
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = kStream;
  const char* subjects[] = {kSubject};
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 1;
  cfg.Storage = js_MemoryStorage;
  jsStreamInfo* si = nullptr;
  jsErrCode jerr{};
  if (auto s = js_AddStream(&si, js, &cfg, nullptr, &jerr); s != NATS_OK) die("add stream", s);
  jsStreamInfo_Destroy(si);
  std::string payload(static_cast<size_t>(size), 'x');
  jsPubOptions po;
  jsPubOptions_Init(&po);
  for (int i = 0; i < messages; ++i) {
    if (auto s = js_PublishAsync(js, kSubject, payload.data(), size, &po); s != NATS_OK)
      die("publish", s);
  }
  if (auto s = js_PublishAsyncComplete(js, nullptr); s != NATS_OK) die("publish complete", s);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
}

// The baseline: what an application writes with nats.c alone, a synchronous fetch loop.
double raw_fetch_loop(const std::string& url, int messages, const std::string& durable) {
  natsConnection* nc = nullptr;
  if (auto s = natsConnection_ConnectTo(&nc, url.c_str()); s != NATS_OK) die("connect", s);
  jsCtx* js = nullptr;
  natsConnection_JetStream(&js, nc, nullptr);
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = kStream;
  so.Config.AckPolicy = js_AckExplicit;
  so.Config.MaxAckPending = 1000;
  natsSubscription* sub = nullptr;
  jsErrCode jerr{};
  if (auto s = js_PullSubscribe(&sub, js, kSubject, durable.c_str(), nullptr, &so, &jerr);
      s != NATS_OK)
    die("pull subscribe", s);
  const auto start = Clock::now();
  int got = 0;
  while (got < messages) {
    natsMsgList list{};
    natsStatus s = natsSubscription_Fetch(&list, sub, 256, 5000, &jerr);
    if (s != NATS_OK && s != NATS_TIMEOUT) die("fetch", s);
    for (int i = 0; i < list.Count; ++i) natsMsg_Ack(list.Msgs[i], nullptr);
    got += list.Count;
    natsMsgList_Destroy(&list);
  }
  natsConnection_Flush(nc);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  natsSubscription_Unsubscribe(sub);  // deletes the consumer it created: fine for a bench
  natsSubscription_Destroy(sub);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return messages / seconds;
}

double natsfleet_consume(const std::string& url, int messages, const std::string& durable) {
  natsfleet::FleetOptions options;
  options.name = "bench";
  options.servers = {url};
  natsfleet::Fleet fleet(options);
  std::atomic<int> got{0};
  natsfleet::WorkSpec spec;
  spec.name = durable;
  spec.subject = kSubject;
  spec.stream = kStream;
  spec.batch = 256;
  spec.max_ack_pending = 1000;
  (void)fleet.add_work(spec, [&](const natsfleet::Message&) {
    got.fetch_add(1, std::memory_order_relaxed);
    return natsfleet::Disposition::ack();
  });
  if (!fleet.start()) std::exit(1);
  // Timed from the first message: binding (consumer creation) is not throughput.
  while (got.load() == 0) std::this_thread::sleep_for(100us);
  const auto start = Clock::now();
  const int first = got.load();
  while (got.load() < messages) std::this_thread::sleep_for(100us);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  fleet.shutdown(5s);
  return (messages - first) / seconds;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int messages = 100'000, size = 128, rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--messages"))
      messages = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--size"))
      size = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::atoi(argv[i + 1]);
  }
  natsfleet::broker::EmbeddedBroker broker;
  if (auto started = broker.start(); !started) {
    std::fprintf(stderr, "bench: %s\n", started.error().describe().c_str());
    return 1;
  }
  fill_stream(broker.url(), messages, size);
  std::printf("consume %d messages of %d bytes, ack each, %d rounds (median), broker %s\n",
              messages, size, rounds, broker.url().c_str());
  std::vector<double> raw, fleet;
  for (int r = 0; r < rounds; ++r) {
    raw.push_back(raw_fetch_loop(broker.url(), messages, "raw-" + std::to_string(r)));
    fleet.push_back(natsfleet_consume(broker.url(), messages, "fleet-" + std::to_string(r)));
    std::printf("  round %d: raw nats.c fetch loop %.0f msg/s, natsfleet %.0f msg/s\n", r + 1,
                raw.back(), fleet.back());
  }
  const double raw_rate = median(raw), fleet_rate = median(fleet);
  std::printf("raw nats.c fetch loop: %.0f msg/s\n", raw_rate);
  std::printf("natsfleet pull engine: %.0f msg/s\n", fleet_rate);
  std::printf("ratio natsfleet/raw:   %.2f\n", fleet_rate / raw_rate);
  return 0;
}
