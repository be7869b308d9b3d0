// A program of a natsfleet user, built outside natsfleet's tree against an installed natsfleet
// (tests/install): shares work "installed-check" on SUBJECT at URL, and exits 0 once it handled
// COUNT messages (1 when 30 s pass first), printing how many.
//
//   consumer nats://127.0.0.1:4222 jobs.run 100
#include <natsfleet/natsfleet.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: consumer URL SUBJECT COUNT\n");
    return 2;
  }
  const int count = std::atoi(argv[3]);
  natsfleet::FleetOptions options;
  options.name = "installed-consumer";
  options.servers = {argv[1]};
  natsfleet::Fleet fleet(options);

  std::mutex mu;
  std::condition_variable cv;
  int handled = 0;
  natsfleet::WorkSpec work;
  work.name = "installed-check";
  work.subject = argv[2];
  work.flow.concurrency = 4;
  auto added = fleet.add_work(work, [&](const natsfleet::Message&) {
    std::lock_guard lock(mu);
    ++handled;
    cv.notify_all();
    return natsfleet::Disposition::ack();
  });
  if (!added) {
    std::fprintf(stderr, "add_work: %s\n", added.error().describe().c_str());
    return 2;
  }
  if (auto started = fleet.start(); !started) {
    std::fprintf(stderr, "start: %s\n", started.error().describe().c_str());
    return 2;
  }
  std::unique_lock lock(mu);
  const bool all = cv.wait_for(lock, std::chrono::seconds(30), [&] { return handled >= count; });
  std::printf("handled %d\n", handled);
  lock.unlock();
  fleet.shutdown(std::chrono::seconds(5));
  return all ? 0 : 1;
}
