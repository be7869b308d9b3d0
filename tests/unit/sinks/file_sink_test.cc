#include "sinks/file_sink.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "sink_test_util.h"

namespace natsfleet::sinks {
namespace {

using namespace std::chrono_literals;
using testing::js_message;
using testing::read_lines;
using testing::TempDir;

TEST(FileSink, AppendsOneParseableRecordPerLineAndCreatesParentDirectories) {
  TempDir dir;
  const auto path = dir.path() / "out" / "nested" / "mail.jsonl";
  {
    FileSink sink({.path = path, .fsync = FsyncPolicy::never});
    for (uint64_t seq = 1; seq <= 3; ++seq) {
      auto r = sink.deliver(js_message("m" + std::to_string(seq), seq), "mail-relay");
      EXPECT_EQ(r.disposition.kind(), Disposition::Kind::ack) << r.error;
    }
    EXPECT_TRUE(sink.healthy());
    EXPECT_EQ(sink.describe(), "file " + path.string());
  }
  // A second sink on the same file appends rather than truncating.
  FileSink again({.path = path, .fsync = FsyncPolicy::never});
  EXPECT_EQ(again.deliver(js_message("m4", 4), "mail-relay").disposition.kind(),
            Disposition::Kind::ack);

  auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 4u);
  for (size_t i = 0; i < lines.size(); ++i) {
    auto j = nlohmann::json::parse(lines[i]);
    EXPECT_EQ(j["subscription"], "mail-relay");
    EXPECT_EQ(j["stream_seq"], i + 1);
    EXPECT_EQ(j["data"], "m" + std::to_string(i + 1));
  }
}

TEST(FileSink, ConcurrentDeliveriesWriteWholeLines) {
  TempDir dir;
  const auto path = dir.path() / "mail.jsonl";
  FileSink sink({.path = path, .fsync = FsyncPolicy::never});
  constexpr int kThreads = 8;
  constexpr int kPerThread = 1000;
  // Big enough payloads that interleaved writes would show as broken JSON.
  const std::string padding(300, 'x');
  std::vector<std::thread> threads;
  std::atomic<int> not_acked{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto r = sink.deliver(
            js_message(std::to_string(t) + ":" + std::to_string(i) + ":" + padding, 1), "s");
        if (r.disposition.kind() != Disposition::Kind::ack) ++not_acked;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(not_acked, 0);

  auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), size_t{kThreads * kPerThread});
  std::set<std::string> seen;
  for (const auto& line : lines) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line.substr(0, 100);
    std::string data = j["data"];
    seen.insert(data.substr(0, data.find(":x")));
  }
  EXPECT_EQ(seen.size(), size_t{kThreads * kPerThread});
}

TEST(FileSink, BatchFsyncAcksOnlyAfterASync) {
  TempDir dir;
  FileSink sink({.path = dir.path() / "mail.jsonl", .fsync = FsyncPolicy::batch});
  // One at a time, every ack has needed a sync of its own.
  for (uint64_t i = 1; i <= 5; ++i) {
    auto r = sink.deliver(js_message("m", i), "s");
    ASSERT_EQ(r.disposition.kind(), Disposition::Kind::ack) << r.error;
    EXPECT_EQ(sink.sync_count(), i);
  }
}

TEST(FileSink, BatchFsyncSharesSyncsBetweenConcurrentDeliveries) {
  TempDir dir;
  const auto path = dir.path() / "mail.jsonl";
  FileSink sink({.path = path, .fsync = FsyncPolicy::batch});
  constexpr int kThreads = 8;
  constexpr int kPerThread = 300;
  std::vector<std::thread> threads;
  std::atomic<int> not_acked{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i)
        if (sink.deliver(js_message("m"), "s").disposition.kind() != Disposition::Kind::ack)
          ++not_acked;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(not_acked, 0);
  EXPECT_EQ(read_lines(path).size(), size_t{kThreads * kPerThread});
  EXPECT_GT(sink.sync_count(), 0u);
  EXPECT_LT(sink.sync_count(), uint64_t{kThreads * kPerThread});
  std::cout << "[ info ] " << kThreads * kPerThread << " records, " << sink.sync_count()
            << " fdatasync calls\n";
}

TEST(FileSink, PathThatIsADirectoryIsRetryableWithoutCrashing) {
  TempDir dir;
  FileSink sink({.path = dir.path(), .fsync = FsyncPolicy::never});
  auto r = sink.deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Disposition::Kind::retry);
  EXPECT_NE(r.error.find("open"), std::string::npos) << r.error;
  EXPECT_FALSE(sink.healthy());
}

TEST(FileSink, PathUnderProcIsRetryableWithoutCrashing) {
  FileSink sink({.path = "/proc/self/no-such-dir/out.jsonl", .fsync = FsyncPolicy::batch});
  auto r = sink.deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Disposition::Kind::retry);
  EXPECT_FALSE(r.error.empty());
  EXPECT_FALSE(sink.healthy());
}

TEST(FileSink, FullDiskIsRetryableWithTheError) {
  // /dev/full accepts the open and fails every write with ENOSPC.
  FileSink sink({.path = "/dev/full", .fsync = FsyncPolicy::never});
  auto r = sink.deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Disposition::Kind::retry);
  EXPECT_NE(r.error.find(std::strerror(ENOSPC)), std::string::npos) << r.error;
  EXPECT_FALSE(sink.healthy());
}

TEST(FileSink, AFileMovedAwayIsNoticedAndThePathOpenedAgain) {
  TempDir dir;
  const auto path = dir.path() / "mail.jsonl";
  const auto rotated = dir.path() / "mail.jsonl.1";
  FileSink sink({.path = path, .fsync = FsyncPolicy::never});
  ASSERT_EQ(sink.deliver(js_message("before"), "s").disposition.kind(), Disposition::Kind::ack);
  std::filesystem::rename(path, rotated);
  // Within about a second, records go to the path again (a new file) instead of the moved one.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists(path) && std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(sink.deliver(js_message("after"), "s").disposition.kind(), Disposition::Kind::ack);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(read_lines(rotated).front().find("before") != std::string::npos, true);
  ASSERT_EQ(sink.deliver(js_message("last"), "s").disposition.kind(), Disposition::Kind::ack);
  EXPECT_NE(read_lines(path).back().find("last"), std::string::npos);
}

TEST(FileSink, OpenIsRetriedOnceThePathBecomesWritable) {
  TempDir dir;
  const auto blocker = dir.path() / "out";
  { std::ofstream(blocker) << "a file where the directory should be"; }
  const auto path = blocker / "mail.jsonl";
  FileSink sink({.path = path, .fsync = FsyncPolicy::never});
  EXPECT_EQ(sink.deliver(js_message("m"), "s").disposition.kind(), Disposition::Kind::retry);
  std::filesystem::remove(blocker);
  auto r = sink.deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Disposition::Kind::ack) << r.error;
  EXPECT_TRUE(sink.healthy());
  EXPECT_EQ(read_lines(path).size(), 1u);
}

TEST(FileSink, DeliverAfterStopIsRetryable) {
  TempDir dir;
  FileSink sink({.path = dir.path() / "mail.jsonl", .fsync = FsyncPolicy::batch});
  sink.stop();
  auto r = sink.deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Disposition::Kind::retry);
  EXPECT_NE(r.error.find("stopped"), std::string::npos);
  sink.stop();  // idempotent
}

}  // namespace
}  // namespace natsfleet::sinks
