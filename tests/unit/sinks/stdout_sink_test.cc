#include "sinks/stdout_sink.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "sink_test_util.h"

namespace natsfleet::sinks {
namespace {

using testing::core_message;
using testing::js_message;

std::vector<std::string> lines_of(std::FILE* f) {
  std::rewind(f);
  std::vector<std::string> lines;
  std::string line;
  for (int c; (c = std::fgetc(f)) != EOF;) {
    if (c == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line += static_cast<char>(c);
    }
  }
  EXPECT_TRUE(line.empty()) << "an unterminated last line";
  return lines;
}

TEST(StdoutSink, WritesOneRecordPerLineAndAcks) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  StdoutSink sink(out);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i)
        EXPECT_EQ(sink.deliver(core_message("up"), "status").disposition.kind(),
                  Disposition::Kind::ack);
    });
  for (auto& t : threads) t.join();
  auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), 400u);
  for (const auto& line : lines) EXPECT_EQ(nlohmann::json::parse(line)["subscription"], "status");
  std::fclose(out);
}

TEST(StdoutSink, WriteErrorIsRetryable) {
  std::FILE* full = std::fopen("/dev/full", "w");
  ASSERT_NE(full, nullptr);
  StdoutSink sink(full);
  auto r = sink.deliver(js_message("m"), "s");
  EXPECT_EQ(r.disposition.kind(), Disposition::Kind::retry);
  EXPECT_NE(r.error.find(std::strerror(ENOSPC)), std::string::npos) << r.error;
  std::fclose(full);
}

TEST(StdoutSink, DeliverAfterStopIsRetryable) {
  std::FILE* out = std::tmpfile();
  StdoutSink sink(out);
  sink.stop();
  EXPECT_EQ(sink.deliver(js_message("m"), "s").disposition.kind(), Disposition::Kind::retry);
  std::fclose(out);
}

}  // namespace
}  // namespace natsfleet::sinks
