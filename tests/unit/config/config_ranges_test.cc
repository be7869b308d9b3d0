// Every number and duration in the daemon config has a range (docs/reference/config.md
// lists it): each key's bounds are accepted, one step beyond each is an error naming file, line,
// key and the range.
#include <gtest/gtest.h>

#include <string>

#include "config/daemon_config.h"

namespace natsfleet::config {
namespace {

// A config with one key set to `value`: `where` says which table it goes in. The key is always on
// line 5.
std::string config_with(const std::string& where, const std::string& key,
                        const std::string& value) {
  const std::string line = key + " = " + value + "\n";
  if (where == "work")
    return "name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\n" + line +
           "sink = { type = \"stdout\" }\n";
  if (where == "work_long_ack")  // a heartbeat is at most a quarter of ack_wait
    return "name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nack_wait = \"24h\"\n" +
           line + "sink = { type = \"stdout\" }\n";
  if (where == "broadcast")
    return "name = \"svc\"\n[[broadcast]]\nname = \"b\"\nsubject = \"a.*.c\"\n" + line +
           "sink = { type = \"stdout\" }\n";
  if (where == "jetstream")
    return "name = \"svc\"\n[[broadcast]]\nname = \"b\"\nsubject = \"a.*.c\"\n" + line +
           "source = \"jetstream\"\nsink = { type = \"stdout\" }\n";
  if (where == "worker")
    return "name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\n[work.sink]\ntype = "
           "\"worker\"\ncommand = [\"/bin/cat\"]\n" +
           line;
  if (where == "http")
    return "name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\n[work.sink]\ntype = "
           "\"http\"\nurl = \"http://127.0.0.1:1/\"\n" +
           line;
  if (where == "websocket")
    return "name = \"svc\"\n[[broadcast]]\nname = \"b\"\nsubject = \"a.*.c.d.e.f.g\"\n[broadcast."
           "sink]\ntype = \"websocket\"\nlisten = \"127.0.0.1:0\"\n" +
           line;
  return {};
}

struct Range {
  std::string where;  // work | broadcast | jetstream | worker | http | websocket
  std::string key;
  std::string min;             // the smallest accepted value, as TOML
  std::string max;             // the largest accepted value, as TOML
  std::string below;           // the first value refused below (empty: none, e.g. min is 0s)
  std::string above;           // the first value refused above
  std::string dotted;          // the key as the error names it
  std::string range_in_words;  // how the error says the range
};

std::ostream& operator<<(std::ostream& out, const Range& r) { return out << r.dotted; }

const Range kRanges[] = {
    {"work", "ack_wait", "\"200ms\"", "\"24h\"", "\"199ms\"", "\"24h1ms\"", "work[0].ack_wait",
     "between 200ms and 24h"},
    {"work_long_ack", "heartbeat", "\"50ms\"", "\"1m\"", "\"49ms\"", "\"1m1ms\"",
     "work[0].heartbeat", "between 50ms and 1m"},
    {"work", "retry_min", "\"1ms\"", "\"30s\"", "\"0s\"", "\"24h1ms\"", "work[0].retry_min",
     "between 1ms and 24h"},
    {"work", "retry_max", "\"500ms\"", "\"24h\"", "", "\"24h1ms\"", "work[0].retry_max",
     "between 1ms and 24h"},
    {"work", "concurrency", "1", "1000", "0", "1025", "work[0].concurrency", "between 1 and 1024"},
    {"work", "max_ack_pending", "1", "1000000", "0", "1000001", "work[0].max_ack_pending",
     "between 1 and 1000000"},
    {"work", "max_deliver", "-1", "1000000", "-2", "1000001", "work[0].max_deliver",
     "between -1 and 1000000"},
    {"broadcast", "concurrency", "1", "1024", "0", "1025", "broadcast[0].concurrency",
     "between 1 and 1024"},
    {"broadcast", "max_queued", "1", "1000000", "0", "1000001", "broadcast[0].max_queued",
     "between 1 and 1000000"},
    {"broadcast", "key_token", "1", "3", "0", "257", "broadcast[0].key_token", "between 1 and 256"},
    {"jetstream", "heartbeat", "\"50ms\"", "\"1m\"", "\"49ms\"", "\"1m1ms\"",
     "broadcast[0].heartbeat", "between 50ms and 1m"},
    {"worker", "timeout", "\"1ms\"", "\"1h\"", "", "\"1h1ms\"", "work[0].sink.timeout",
     "between 0s and 1h"},
    {"http", "timeout", "\"1ms\"", "\"1h\"", "", "\"1h1ms\"", "work[0].sink.timeout",
     "between 0s and 1h"},
    {"websocket", "max_sessions", "1", "1000000", "0", "1000001", "broadcast[0].sink.max_sessions",
     "between 1 and 1000000"},
    {"websocket", "key_token", "1", "7", "0", "257", "broadcast[0].sink.key_token",
     "between 1 and 256"},
};

class ConfigRangeTest : public testing::TestWithParam<Range> {};

int line_of_key(const std::string& text, const std::string& key) {
  int line = 1;
  for (size_t at = 0; at < text.size(); ++at) {
    if (text.compare(at, key.size() + 3, key + " = ") == 0 && (at == 0 || text[at - 1] == '\n'))
      return line;
    if (text[at] == '\n') ++line;
  }
  return 0;
}

TEST_P(ConfigRangeTest, AcceptsItsBoundsAndNamesTheRangeBeyondThem) {
  const Range& r = GetParam();
  for (const std::string& good : {r.min, r.max}) {
    EXPECT_NO_THROW(parse_config(config_with(r.where, r.key, good), "conf/range.toml").value())
        << r.key << " = " << good;
  }
  for (const std::string& bad : {r.below, r.above}) {
    if (bad.empty()) continue;
    const std::string text = config_with(r.where, r.key, bad);
    try {
      parse_config(text, "conf/range.toml").value();
      ADD_FAILURE() << r.dotted << " = " << bad << " was accepted";
    } catch (const ConfigError& error) {
      EXPECT_EQ(error.key(), r.dotted) << error.what();
      EXPECT_EQ(error.line(), line_of_key(text, r.key)) << error.what();
      EXPECT_NE(error.problem().find(r.range_in_words), std::string::npos) << error.what();
      EXPECT_EQ(std::string(error.what()).rfind("conf/range.toml:", 0), 0u) << error.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Config, ConfigRangeTest, testing::ValuesIn(kRanges),
                         [](const testing::TestParamInfo<Range>& param) {
                           std::string name = param.param.where + "_" + param.param.key;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

// The cases the issue reported: a thread per handler made 200000 abort the daemon, and an
// hour count that overflows nanoseconds was accepted.
TEST(ConfigRange, ReportedValuesAreRefusedByKey) {
  struct Case {
    std::string line;
    std::string key;
    std::string problem;
  };
  for (const Case& c : {
           Case{"concurrency = 200000", "work[0].concurrency",
                "must be between 1 and 1024, got 200000"},
           Case{"ack_wait = \"9999999999h\"", "work[0].ack_wait",
                "must be between 200ms and 24h, got '9999999999h'"},
           Case{"heartbeat = \"99999999999999999999999h\"", "work[0].heartbeat",
                "must be between 50ms and 1m"},
           Case{"max_ack_pending = 9223372036854775807", "work[0].max_ack_pending",
                "must be between 1 and 1000000"},
       }) {
    const std::string text = "name = \"svc\"\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\n" +
                             c.line + "\nsink = { type = \"stdout\" }\n";
    try {
      parse_config(text, "svc.toml").value();
      ADD_FAILURE() << c.line << " was accepted";
    } catch (const ConfigError& error) {
      EXPECT_EQ(error.line(), 5) << error.what();
      EXPECT_EQ(error.key(), c.key) << error.what();
      EXPECT_NE(error.problem().find(c.problem), std::string::npos) << error.what();
    }
  }
}

TEST(ConfigRange, ShutdownTimeoutHasARange) {
  auto text = [](const std::string& value) {
    return "name = \"svc\"\nshutdown_timeout = " + value +
           "\n[[work]]\nname = \"w\"\nsubject = \"a.b\"\nsink = { type = \"stdout\" }\n";
  };
  EXPECT_NO_THROW(parse_config(text("\"0s\""), "svc.toml").value());
  EXPECT_NO_THROW(parse_config(text("\"1h\""), "svc.toml").value());
  try {
    parse_config(text("\"1h1ms\""), "svc.toml").value();
    ADD_FAILURE() << "1h1ms accepted";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.line(), 2);
    EXPECT_EQ(error.key(), "shutdown_timeout");
    EXPECT_NE(error.problem().find("between 0s and 1h"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace natsfleet::config
