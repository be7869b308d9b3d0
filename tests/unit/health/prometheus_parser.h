// A strict reader of the Prometheus text exposition format 0.0.4, for tests that check what a
// /metrics endpoint serves. It rejects what a lenient scraper would silently accept (split
// families, duplicate series, non-cumulative buckets, bad escapes), naming the offending line.
//
//   auto parsed = natsfleet::testing::parse_prometheus(body);   // throws std::runtime_error
//   EXPECT_EQ(parsed.value("natsfleet_up", {{"service", "mailer"}}), 1);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace natsfleet::testing {

using PromLabels = std::map<std::string, std::string>;

struct Sample {
  std::string name;
  PromLabels labels;  // unescaped values
  double value = 0;
  std::optional<int64_t> timestamp_ms;
};

struct ParsedMetrics {
  std::vector<Sample> samples;  // in text order
  // Family name -> counter | gauge | histogram | summary | untyped, from the TYPE lines.
  std::map<std::string, std::string> types;
  std::map<std::string, std::string> help;  // family name -> docstring, unescaped

  // The sample with exactly these labels, or nullptr.
  const Sample* find(std::string_view name, const PromLabels& labels) const;
  // Its value; throws std::out_of_range naming the series when there is none.
  double value(std::string_view name, const PromLabels& labels) const;
  // Every sample of that name, in text order.
  std::vector<const Sample*> all(std::string_view name) const;
};

// Throws std::runtime_error("line N: ...") on the first violation of the format: HELP/TYPE
// syntax; a TYPE or HELP repeated or after its family's samples; invalid metric or label names
// (including reserved "__" labels); bad label value escapes; duplicate label names or series;
// values that are not numbers, +Inf, -Inf or NaN; counters not named *_total or negative;
// histogram samples other than _bucket/_sum/_count, buckets out of le order, not cumulative,
// without +Inf, +Inf != _count, or _sum missing; a family whose lines are split by another's;
// text not ending in a line feed.
ParsedMetrics parse_prometheus(std::string_view text);

}  // namespace natsfleet::testing
