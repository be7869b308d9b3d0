#include "sinks/worker_sink.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "sink_test_util.h"

namespace natsfleet::sinks {
namespace {

using namespace std::chrono_literals;
using testing::elapsed_since;
using testing::js_message;
using testing::ordered_message;
using testing::wait_for;
using Kind = Disposition::Kind;
using Clock = std::chrono::steady_clock;

std::vector<std::string> script(const std::string& name, std::vector<std::string> args = {}) {
  std::vector<std::string> argv = {
      "/usr/bin/python3", std::string(NATSFLEET_SOURCE_DIR) + "/tests/unit/sinks/testdata/" + name};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

WorkerSinkOptions fast(std::vector<std::string> argv, std::chrono::milliseconds timeout = 10s) {
  WorkerSinkOptions o;
  o.command = std::move(argv);
  o.timeout = timeout;
  o.restart_min = 10ms;
  o.restart_max = 100ms;
  o.stop_grace = 2s;
  o.term_grace = 500ms;
  return o;
}

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

// How long ago the kernel started process `pid`: its start time in /proc/<pid>/stat (field 22,
// clock ticks since boot) against CLOCK_BOOTTIME. The sink notes a worker's start just before it
// spawns it: the process is younger than the sink's note by the time the spawn took.
std::chrono::milliseconds up_for(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields are counted from after the command name, which may hold spaces and parentheses.
  std::istringstream fields(stat.substr(stat.rfind(')') + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) fields >> field;
  const auto ticks = std::stoll(field);
  timespec now{};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  const auto boot_now = std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
  const auto started = std::chrono::milliseconds(ticks * 1000 / ::sysconf(_SC_CLK_TCK));
  return std::chrono::duration_cast<std::chrono::milliseconds>(boot_now - started);
}

TEST(WorkerSink, AcksWhatAnEchoWorkerAcks) {
  WorkerSink sink(fast(script("ack_worker.py")));
  for (uint64_t seq = 1; seq <= 20; ++seq) {
    auto r = sink.deliver(js_message("m", seq), "mail-relay");
    EXPECT_EQ(r.disposition.kind(), Kind::ack) << r.error;
    EXPECT_TRUE(r.publish.empty());
  }
  EXPECT_TRUE(sink.healthy());
  EXPECT_EQ(sink.starts(), 1u);
}

TEST(WorkerSink, WorkerReadsTheRecordWithTheIdFirst) {
  WorkerSink sink(fast(script("scripted_worker.py")));
  auto r = sink.deliver(js_message("keys"), "mail-relay");
  EXPECT_EQ(r.disposition.kind(), Kind::term);
  EXPECT_EQ(r.error,
            "worker: id,subscription,subject,stream,stream_seq,consumer_seq,delivered,partition,"
            "epoch,time,headers,data,encoding");
}

TEST(WorkerSink, WorkerReadsTheFencingToken) {
  WorkerSink sink(fast(script("scripted_worker.py")));
  auto plain = sink.deliver(js_message("fence", 57), "orders");
  EXPECT_EQ(plain.error, "worker: fence None None 57");
  auto ordered = sink.deliver(ordered_message("fence", 57, 7, 12), "orders");
  EXPECT_EQ(ordered.error, "worker: fence 7 12 57");
}

TEST(WorkerSink, NakWithDelayCarriesPublishesWithStableMsgIds) {
  WorkerSink sink(fast(script("scripted_worker.py")));
  auto r = sink.deliver(js_message("nak", 42), "mail-relay");
  EXPECT_EQ(r.disposition.kind(), Kind::nak);
  EXPECT_EQ(r.disposition.delay(), 5s);
  ASSERT_EQ(r.publish.size(), 2u);
  EXPECT_EQ(r.publish[0].subject, "retry.mail.outgoing");
  EXPECT_EQ(r.publish[0].data, "nak");
  EXPECT_EQ(r.publish[0].msg_id, "mail-relay/MAIL:42:0");
  EXPECT_EQ(r.publish[1].subject, "audit");
  EXPECT_EQ(r.publish[1].msg_id, "mail-relay/MAIL:42:1");
  // The redelivery publishes under the same ids, so the stream drops the repeats.
  auto again = sink.deliver(js_message("nak", 42, 2), "mail-relay");
  ASSERT_EQ(again.publish.size(), 2u);
  EXPECT_EQ(again.publish[0].msg_id, "mail-relay/MAIL:42:0");
  // Another work on the same source message derives under its own ids.
  auto other = sink.deliver(js_message("nak", 42), "mail-audit");
  ASSERT_EQ(other.publish.size(), 2u);
  EXPECT_EQ(other.publish[0].msg_id, "mail-audit/MAIL:42:0");
}

TEST(WorkerSink, TermUnknownResultsAndNoise) {
  WorkerSink sink(fast(script("scripted_worker.py")));
  EXPECT_EQ(sink.deliver(js_message("term"), "s").disposition.kind(), Kind::term);
  auto weird = sink.deliver(js_message("weird"), "s");
  EXPECT_EQ(weird.disposition.kind(), Kind::nak);
  EXPECT_NE(weird.error.find("unknown result"), std::string::npos) << weird.error;
  // Junk lines and a line without an id are skipped; the real answer still counts.
  EXPECT_EQ(sink.deliver(js_message("noise"), "s").disposition.kind(), Kind::ack);
  EXPECT_EQ(sink.deliver(js_message("ack"), "s").disposition.kind(), Kind::ack);
  EXPECT_EQ(sink.starts(), 1u);
}

TEST(WorkerSink, OutOfOrderAnswersReachTheirOwnDeliveries) {
  WorkerSink sink(fast(script("shuffle_worker.py")));
  constexpr int kThreads = 8;
  constexpr int kPerThread = 25;
  std::atomic<int> mismatched{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int tag = t * 1000 + i;
        auto r = sink.deliver(js_message(std::to_string(tag)), "s");
        if (r.disposition.kind() != Kind::nak ||
            r.disposition.delay() != std::chrono::milliseconds(tag))
          ++mismatched;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatched, 0);
  EXPECT_EQ(sink.starts(), 1u);
}

TEST(WorkerSink, CrashingWorkerRetriesWhatIsInFlightAndIsRestarted) {
  // A delivery that waited out its timeout takes at least this long; every other one is settled
  // by an answer or a death, which take a small fraction of it even on a loaded machine.
  constexpr auto kTimeout = 60s;
  WorkerSink sink(fast(script("crash_every_n_worker.py", {"7"}), kTimeout));
  constexpr int kThreads = 4;
  constexpr int kPerThread = 15;
  std::atomic<int> acked{0}, exited{0}, other{0};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        auto r = sink.deliver(js_message("m"), "s");
        if (r.disposition.kind() == Kind::ack) {
          ++acked;
        } else if (r.disposition.kind() == Kind::retry && r.error.rfind("worker exited", 0) == 0) {
          ++exited;
        } else {
          ++other;
          ADD_FAILURE() << r.error;
        }
      }
    });
  for (auto& t : threads) t.join();
  std::cout << "[ info ] " << acked << " acked, " << exited << " to retry (worker exited), "
            << sink.starts() << " starts, " << elapsed_since(start).count() << "ms\n";
  EXPECT_EQ(acked + exited, kThreads * kPerThread);
  EXPECT_GT(exited, 0);
  EXPECT_GT(acked, 0);
  EXPECT_GE(sink.starts(), 2u);
  // Nothing waited for a timeout.
  EXPECT_LT(elapsed_since(start), kTimeout / 2);
  // One at a time, at most one delivery in seven meets a crash; the rest are acked by
  // whichever worker is up.
  int later_acks = 0;
  for (int i = 0; i < 7; ++i)
    if (sink.deliver(js_message("m"), "s").disposition.kind() == Kind::ack) ++later_acks;
  EXPECT_GE(later_acks, 6);
}

TEST(WorkerSink, SilentWorkerTimesOutAndIsReplaced) {
  WorkerSink sink(fast(script("silent_worker.py"), 300ms));
  ASSERT_TRUE(wait_for([&] { return sink.worker_pid() != 0; }, 30s));
  const pid_t first = sink.worker_pid();
  const auto start = Clock::now();
  auto r = sink.deliver(js_message("m"), "s");
  const auto took = elapsed_since(start);
  EXPECT_EQ(r.disposition.kind(), Kind::retry);
  EXPECT_NE(r.error.find("timed out"), std::string::npos) << r.error;
  EXPECT_GE(took, 290ms);
  EXPECT_LT(took, 30s);  // the point is that it does not wait for ever
  // The wedged worker was killed and a new one started.
  EXPECT_TRUE(wait_for([&] { return process_gone(first); }, 30s));
  EXPECT_TRUE(wait_for([&] { return sink.starts() == 2 && sink.worker_pid() != 0; }, 30s));
  EXPECT_NE(sink.worker_pid(), first);
}

TEST(WorkerSink, WorkerThatDoesNotReadItsStdinTimesOutAndIsReplaced) {
  // sleep never reads: a record larger than the socket buffer cannot be written.
  auto options = fast({"/bin/sleep", "1000"}, 300ms);
  options.stop_grace = 100ms;  // it ignores the end of its stdin too
  WorkerSink sink(options);
  ASSERT_TRUE(wait_for([&] { return sink.worker_pid() != 0; }, 30s));
  const pid_t first = sink.worker_pid();
  const auto start = Clock::now();
  auto r = sink.deliver(js_message(std::string(4 << 20, 'x')), "s");
  const auto took = elapsed_since(start);
  EXPECT_EQ(r.disposition.kind(), Kind::retry);
  // The writer and the supervisor race to report it; either way it is a timeout.
  EXPECT_NE(r.error.find("timed out"), std::string::npos) << r.error;
  EXPECT_GE(took, 290ms);
  EXPECT_LT(took, 30s);  // the point is that it does not wait for ever
  EXPECT_TRUE(wait_for([&] { return process_gone(first); }, 30s));
  EXPECT_TRUE(wait_for([&] { return sink.starts() == 2 && sink.worker_pid() != 0; }, 30s));
}

TEST(WorkerSink, CrashLoopIsUnhealthyUntilAWorkerStaysUp) {
  testing::TempDir dir;
  auto options = fast(script("flaky_start_worker.py", {(dir.path() / "starts").string(), "7"}));
  options.restart_min = 1ms;
  options.restart_max = 5ms;
  options.crash_limit = 5;
  options.crash_window = 60s;
  options.stable_after = 1s;
  WorkerSink sink(options);
  // Deaths 6 and 7 within the window: more than crash_limit.
  ASSERT_TRUE(wait_for([&] { return !sink.healthy(); }, 30s));
  ASSERT_TRUE(wait_for([&] { return sink.starts() == 8 && sink.worker_pid() != 0; }, 30s));
  const pid_t pid = sink.worker_pid();
  ASSERT_TRUE(wait_for([&] { return sink.healthy(); }, 30s));
  // Healthy again only once the eighth worker had stayed up for stable_after. Measured from the
  // process's own start, which however late this thread looked can only read longer; the slack
  // is for the moment between the sink noting the start and the kernel making the process.
  EXPECT_GE(up_for(pid), options.stable_after / 2);
  EXPECT_EQ(sink.worker_pid(), pid);
  EXPECT_EQ(sink.starts(), 8u);
  EXPECT_EQ(sink.deliver(js_message("m"), "s").disposition.kind(), Kind::ack);
}

TEST(WorkerSink, ProgramThatCannotStartIsRetryableAndUnhealthy) {
  auto options = fast({"/nonexistent/natsfleet-worker"}, 200ms);
  options.restart_min = 1ms;
  options.restart_max = 5ms;
  WorkerSink sink(options);
  auto r = sink.deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Kind::retry);
  EXPECT_NE(r.error.find("not running"), std::string::npos) << r.error;
  EXPECT_TRUE(wait_for([&] { return !sink.healthy(); }, 30s));
}

TEST(WorkerSink, BeginStopEndsWaitsForAWorkerThatIsNotUp) {
  constexpr auto kTimeout = 120s;
  auto options = fast({"/nonexistent/natsfleet-worker"}, kTimeout);
  options.restart_min = 1ms;
  options.restart_max = 5ms;
  WorkerSink sink(options);
  SinkResult result;
  std::thread waiting([&] { result = sink.deliver(js_message("m"), "s"); });
  std::this_thread::sleep_for(100ms);
  const auto start = Clock::now();
  sink.begin_stop();
  waiting.join();
  EXPECT_LT(elapsed_since(start), kTimeout / 2) << "not the delivery's timeout";
  EXPECT_EQ(result.disposition.kind(), Kind::retry);
  EXPECT_NE(result.error.find("not running"), std::string::npos) << result.error;
}

TEST(WorkerSink, StopLetsTheWorkerFinishAndExit) {
  auto options = fast(script("ack_worker.py"));
  options.stop_grace = 60s;
  WorkerSink sink(options);
  EXPECT_EQ(sink.deliver(js_message("m"), "s").disposition.kind(), Kind::ack);
  const pid_t pid = sink.worker_pid();
  const auto start = Clock::now();
  sink.stop();
  EXPECT_LT(elapsed_since(start), options.stop_grace / 2);  // it exits on EOF: no grace waited
  EXPECT_TRUE(process_gone(pid));
  auto r = sink.deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Kind::retry);
  EXPECT_NE(r.error.find("stopped"), std::string::npos);
  sink.stop();  // idempotent
}

TEST(WorkerSink, StopKillsAWorkerThatIgnoresEofAndSigterm) {
  testing::TempDir dir;
  const auto ready = dir.path() / "ignoring-sigterm";
  auto options = fast(script("stubborn_worker.py", {ready.string()}));
  options.stop_grace = 200ms;
  options.term_grace = 200ms;
  WorkerSink sink(options);
  ASSERT_TRUE(wait_for([&] { return sink.worker_pid() != 0; }, 30s));
  const pid_t pid = sink.worker_pid();
  // Stop only once python ignores SIGTERM, or SIGTERM alone would end it.
  ASSERT_TRUE(wait_for([&] { return std::filesystem::exists(ready); }, 30s));
  const auto start = Clock::now();
  sink.stop();
  const auto took = elapsed_since(start);
  EXPECT_GE(took, 390ms);  // both graces were waited out
  EXPECT_LT(took, 30s);    // and then it was killed
  EXPECT_TRUE(process_gone(pid));
}

TEST(WorkerSink, StopRetriesDeliveriesStillWaitingForAnAnswer) {
  constexpr auto kTimeout = 120s;
  auto options = fast(script("silent_worker.py"), kTimeout);
  options.stop_grace = 200ms;
  WorkerSink sink(options);
  SinkResult result;
  std::thread waiting([&] { result = sink.deliver(js_message("m"), "s"); });
  ASSERT_TRUE(wait_for([&] { return sink.worker_pid() != 0; }, 30s));
  std::this_thread::sleep_for(100ms);
  const auto start = Clock::now();
  sink.stop();
  waiting.join();
  EXPECT_LT(elapsed_since(start), kTimeout / 2);  // not the delivery's timeout
  EXPECT_EQ(result.disposition.kind(), Kind::retry);
  EXPECT_NE(result.error.find("stopped"), std::string::npos) << result.error;
}

}  // namespace
}  // namespace natsfleet::sinks
