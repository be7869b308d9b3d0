// examples/fencing-sink as natsfleet's worker sink runs it: sink records on its stdin, answers
// on its stdout. Late and repeated writes of a key are acked and ignored, each key ends with its
// newest value, and a restarted sink keeps the fence.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/daemon_process.h"

namespace natsfleet::testing {
namespace {

using nlohmann::json;

struct Record {
  int id;
  std::string subject;
  int partition;
  uint64_t stream_seq;
  uint64_t epoch;
  std::string data;
};

// The line the worker sink writes for an ordered delivery (record_json_with_id's shape).
std::string record_line(const Record& r) {
  return json{{"id", r.id},
              {"subscription", "orders"},
              {"subject", r.subject},
              {"stream", "ORDERS"},
              {"stream_seq", r.stream_seq},
              {"consumer_seq", r.stream_seq},
              {"delivered", 1},
              {"partition", r.partition},
              {"epoch", r.epoch},
              {"time", "2026-11-29T21:49:45.123Z"},
              {"headers", json::object()},
              {"data", r.data},
              {"encoding", "utf8"}}
      .dump();
}

// Runs the example on `records` (key token 2) with `state` as its state file, to its end.
CliOutcome run_sink(const TempDir& dir, const std::string& state,
                    const std::vector<Record>& records) {
  const std::string input = dir.path() + "/input.jsonl";
  std::ofstream out(input);
  for (const auto& r : records) out << record_line(r) << "\n";
  out.close();
  return run_shell("timeout 30 '" + std::string(NATSFLEET_FENCING_SINK_BIN) + "' '" + state +
                   "' 2 < '" + input + "'");
}

std::vector<json> answers(const std::string& out) {
  std::vector<json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

json read_state(const std::string& path) { return json::parse(std::ifstream(path)); }

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(FencingSinkExample, LateAndRepeatedWritesAreAckedButNotApplied) {
  TempDir dir;
  const std::string state = dir.path() + "/state.json";
  const auto o = run_sink(dir, state,
                          {{1, "orders.42.7", 7, 5, 2, "paid"},
                           {2, "orders.42.7", 7, 3, 1, "created"},  // late: below 5
                           {3, "orders.7.3", 3, 4, 2, "packed"},    // another key
                           {4, "orders.7.3", 3, 6, 2, "shipped"},
                           {5, "orders.42.7", 7, 5, 2, "paid"},     // a repeat
                           {6, "orders.7.3", 3, 4, 1, "packed"}});  // a paused owner's late write
  ASSERT_EQ(o.code, 0) << o.err;
  const auto got = answers(o.out);
  ASSERT_EQ(got.size(), 6u) << o.out;
  for (int i = 0; i < 6; ++i) EXPECT_EQ(got[i], (json{{"id", i + 1}, {"result", "ack"}}));
  EXPECT_EQ(read_state(state), (json{{"42", {{"data", "paid"}, {"stream_seq", 5}}},
                                     {"7", {{"data", "shipped"}, {"stream_seq", 6}}}}));
  EXPECT_EQ(count(o.err, "is not above"), 3u) << o.err;
}

TEST(FencingSinkExample, ARestartedSinkKeepsTheFence) {
  TempDir dir;
  const std::string state = dir.path() + "/state.json";
  ASSERT_EQ(run_sink(dir, state, {{1, "orders.7.3", 3, 6, 2, "shipped"}}).code, 0);
  const auto o = run_sink(dir, state,
                          {{1, "orders.7.3", 3, 5, 1, "packed"},  // late, after the restart
                           {2, "orders.42.7", 7, 10, 3, "refunded"}});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto got = answers(o.out);
  ASSERT_EQ(got.size(), 2u) << o.out;
  for (const auto& a : got) EXPECT_EQ(a["result"], "ack");
  EXPECT_EQ(read_state(state), (json{{"42", {{"data", "refunded"}, {"stream_seq", 10}}},
                                     {"7", {{"data", "shipped"}, {"stream_seq", 6}}}}));
  EXPECT_EQ(count(o.err, "is not above"), 1u) << o.err;
}

TEST(FencingSinkExample, ARecordWithoutItsKeyTokenIsTerminated) {
  TempDir dir;
  const auto o = run_sink(dir, dir.path() + "/state.json", {{1, "orders", 0, 5, 2, "paid"}});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto got = answers(o.out);
  ASSERT_EQ(got.size(), 1u) << o.out;
  EXPECT_EQ(got[0]["result"], "term");
}

}  // namespace
}  // namespace natsfleet::testing
