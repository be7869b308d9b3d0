// A replica in its own process, for tests that kill one with SIGKILL. It consumes one work
// subscription and appends "<stream_seq> <data>" for each message it handles to --out.
//
//   fleet_replica --server URL --work NAME --subject SUBJ --out FILE [--ack-wait-ms N] [--hold]
//                 [--push-queue] [--key-token N [--partitions P]] [--handle-ms N]
//                 [--concurrency N] [--down-while FILE] [--lease-ms N] [--pause-on DATA]
//
// With --hold it records messages and never answers them: they are in flight when it dies.
// With --key-token the work is ordered per key: each line starts with the monotonic clock
// (nanoseconds, comparable across processes on one machine) at which it was handled, and ends
// with the fencing token's partition and epoch. --pause-on makes the process stop itself
// (SIGSTOP) when it has taken the message whose data is DATA, before it writes it: a pause
// between taking a message and writing it downstream.
// --handle-ms makes each handler take that long, after its line is written. With --down-while
// the downstream is down (Disposition::retry, nothing written) while FILE exists, and each such
// refusal appends the message's data as a line to FILE.refused. With
// NATSFLEET_REPLICA_DEBUG set in the environment it logs at debug level.
#include <spdlog/spdlog.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include "natsfleet/fleet.h"
#include "support/fast_fleet.h"

int main(int argc, char** argv) {
  std::string server, work, subject, out;
  bool hold = false;
  bool push_queue = false;
  int ack_wait_ms = 2000;
  int key_token = 0, partitions = 16, handle_ms = 0, concurrency = 0;
  std::string down_while, pause_on;
  int lease_ms = 0;
  std::atomic<bool> paused{false};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--server")
      server = next();
    else if (a == "--work")
      work = next();
    else if (a == "--subject")
      subject = next();
    else if (a == "--out")
      out = next();
    else if (a == "--ack-wait-ms")
      ack_wait_ms = std::stoi(next());
    else if (a == "--hold")
      hold = true;
    else if (a == "--push-queue")
      push_queue = true;
    else if (a == "--key-token")
      key_token = std::stoi(next());
    else if (a == "--partitions")
      partitions = std::stoi(next());
    else if (a == "--handle-ms")
      handle_ms = std::stoi(next());
    else if (a == "--concurrency")
      concurrency = std::stoi(next());
    else if (a == "--down-while")
      down_while = next();
    else if (a == "--lease-ms")
      lease_ms = std::stoi(next());
    else if (a == "--pause-on")
      pause_on = next();
  }
  if (std::getenv("NATSFLEET_REPLICA_DEBUG"))
    spdlog::default_logger()->set_level(spdlog::level::debug);
  std::mutex mu;
  std::ofstream file(out, std::ios::app);
  natsfleet::Fleet fleet(natsfleet::testing::fast_options({server}, "replica-process"));
  auto spec = natsfleet::testing::fast_work(work, subject);
  spec.flow.ack_wait = std::chrono::milliseconds(ack_wait_ms);
  spec.flow.concurrency = hold ? 64 : 1;
  spec.flow.max_ack_pending = 1000;
  if (push_queue) spec.shape = natsfleet::WorkShape::push_queue;
  if (key_token > 0) {
    spec.per_key.emplace();
    spec.per_key->key_token = key_token;
    spec.per_key->partitions = partitions;
    if (lease_ms > 0) spec.per_key->lease = std::chrono::milliseconds(lease_ms);
  }
  if (concurrency > 0) spec.flow.concurrency = concurrency;
  if (!down_while.empty())
    spec.failure.retry_max = std::chrono::milliseconds(500);  // back soon after
  auto added = fleet.add_work(spec, [&](const natsfleet::Message& m) {
    if (!down_while.empty() && std::ifstream(down_while)) {
      std::ofstream(down_while + ".refused", std::ios::app) << m.data() << std::endl;
      return natsfleet::Disposition::retry().because("down while " + down_while + " exists");
    }
    if (!pause_on.empty() && m.data() == pause_on && !paused.exchange(true)) std::raise(SIGSTOP);
    {
      std::lock_guard lock(mu);
      if (key_token > 0) {
        timespec now{};
        clock_gettime(CLOCK_MONOTONIC, &now);
        file << now.tv_sec * 1'000'000'000LL + now.tv_nsec << ' ';
      }
      file << m.stream_seq() << ' ' << m.data();
      if (m.fence()) file << ' ' << m.fence()->partition << ' ' << m.fence()->epoch;
      file << '\n';
      file.flush();
    }
    if (handle_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(handle_ms));
    if (hold)
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
    return natsfleet::Disposition::ack();
  });
  if (!added || !fleet.start()) return 2;
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
}
