#include "prometheus_parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace natsfleet::testing {
namespace {

TEST(PrometheusParser, ReadsAValidExposition) {
  const std::string text =
      "# A plain comment\n"
      "# HELP http_requests_total Requests \\\\ served,\\nby code.\n"
      "# TYPE http_requests_total counter\n"
      "http_requests_total{code=\"200\",path=\"/a\\\"b\\\\c\\nd\"} 1027 1395066363000\n"
      "http_requests_total{code=\"400\",} 3\n"
      "\n"
      "# TYPE temperature gauge\n"
      "temperature -1.5e1\n"
      "# TYPE latency_seconds histogram\n"
      "latency_seconds_bucket{le=\"0.1\"} 2\n"
      "latency_seconds_bucket{le=\"1\"} 5\n"
      "latency_seconds_bucket{le=\"+Inf\"} 6\n"
      "latency_seconds_sum 3.25\n"
      "latency_seconds_count 6\n"
      "# TYPE rpc summary\n"
      "rpc{quantile=\"0.5\"} NaN\n"
      "rpc_sum 0\n"
      "rpc_count 0\n"
      "untyped_thing +Inf\n";
  const ParsedMetrics p = parse_prometheus(text);
  EXPECT_EQ(p.samples.size(), 12u);
  EXPECT_EQ(p.types.at("http_requests_total"), "counter");
  EXPECT_EQ(p.types.at("latency_seconds"), "histogram");
  EXPECT_EQ(p.types.count("untyped_thing"), 0u);
  EXPECT_EQ(p.help.at("http_requests_total"), "Requests \\ served,\nby code.");
  EXPECT_EQ(p.value("http_requests_total", {{"code", "200"}, {"path", "/a\"b\\c\nd"}}), 1027);
  EXPECT_EQ(
      *p.find("http_requests_total", {{"code", "200"}, {"path", "/a\"b\\c\nd"}})->timestamp_ms,
      1395066363000);
  EXPECT_EQ(p.value("temperature", {}), -15);
  EXPECT_EQ(p.value("latency_seconds_bucket", {{"le", "+Inf"}}), 6);
  EXPECT_TRUE(std::isnan(p.value("rpc", {{"quantile", "0.5"}})));
  EXPECT_TRUE(std::isinf(p.value("untyped_thing", {})));
  EXPECT_EQ(p.all("latency_seconds_bucket").size(), 3u);
  EXPECT_THROW(p.value("temperature", {{"x", "y"}}), std::out_of_range);
}

TEST(PrometheusParser, ErrorNamesTheLine) {
  try {
    parse_prometheus("# TYPE a gauge\na 1\na{x=\"\\t\"} 2\n");
    FAIL() << "accepted a bad escape";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("line 3: ", 0), 0u) << e.what();
  }
  try {
    // A histogram problem is reported at its first sample's line.
    parse_prometheus("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n");
    FAIL() << "accepted a histogram without _sum";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("line 2: ", 0), 0u) << e.what();
  }
}

struct Malformed {
  const char* name;
  const char* text;
  const char* why;  // a fragment the error message must contain
};

class PrometheusParserRejects : public ::testing::TestWithParam<Malformed> {};

TEST_P(PrometheusParserRejects, Input) {
  const Malformed& m = GetParam();
  try {
    parse_prometheus(m.text);
    FAIL() << "accepted:\n" << m.text;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(m.why), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("line ", 0), 0u) << e.what();
  }
}

const Malformed kMalformed[] = {
    {"TypeAfterSamples", "a 1\n# TYPE a gauge\n", "after its samples"},
    {"HistogramTypeAfterUntypedBuckets", "h_bucket{le=\"+Inf\"} 1\n# TYPE h histogram\n",
     "after its samples"},
    {"HelpAfterSamples", "# TYPE a gauge\na 1\n# HELP a late\n", "after its samples"},
    {"SecondType", "# TYPE a gauge\n# TYPE a gauge\n", "second TYPE"},
    {"SecondHelp", "# HELP a x\n# HELP a y\n", "second HELP"},
    {"UnknownType", "# TYPE a meter\n", "unknown TYPE"},
    {"TypeWithTrailingWord", "# TYPE a gauge extra\n", "unknown TYPE"},
    {"TypeWithoutName", "# TYPE\n", "needs a metric name"},
    {"HelpGluedToHash", "#HELP a x\n", "blank between #"},
    {"BadHelpEscape", "# HELP a tab\\there\n", "invalid escape"},
    {"MetricNameStartsWithDigit", "1abc 1\n", "invalid metric name"},
    {"MetricNameWithDash", "a-b 1\n", "invalid metric name"},
    {"LabelNameWithColon", "a{b:c=\"x\"} 1\n", "invalid label name"},
    {"ReservedLabelName", "a{__name__=\"x\"} 1\n", "reserved"},
    {"UnquotedLabelValue", "a{b=x} 1\n", "must be quoted"},
    {"BadLabelEscape", "a{b=\"x\\ty\"} 1\n", "invalid escape"},
    {"UnterminatedLabelValue", "a{b=\"x} 1\n", "unterminated value"},
    {"UnterminatedLabelSet", "a{b=\"x\" 1\n", "expected , or }"},
    {"DuplicateLabel", "a{b=\"1\",b=\"2\"} 1\n", "given twice"},
    {"DuplicateSeries", "# TYPE a gauge\na{b=\"1\"} 1\na{b=\"1\"} 2\n", "duplicate series"},
    {"DuplicateSeriesLabelOrder", "a{x=\"1\",y=\"2\"} 1\na{y=\"2\",x=\"1\"} 1\n",
     "duplicate series"},
    {"NonNumericValue", "a 1,5\n", "invalid value"},
    {"LowercaseInf", "a inf\n", "invalid value"},
    {"MissingValue", "a{b=\"1\"}\n", "expected a blank and a value"},
    {"BadTimestamp", "a 1 12.5\n", "invalid timestamp"},
    {"TextAfterTimestamp", "a 1 12 x\n", "after the timestamp"},
    {"IndentedSample", "  a 1\n", "must start with the metric name"},
    {"CarriageReturn", "a 1\r\n", "carriage return"},
    {"NoFinalLineFeed", "# TYPE a gauge\na 1", "line feed"},
    {"CounterWithoutTotal", "# TYPE requests counter\nrequests 1\n", "*_total"},
    {"NegativeCounter", "# TYPE a_total counter\na_total -1\n", "negative"},
    {"FamilySplit", "# TYPE a gauge\na{x=\"1\"} 1\n# TYPE b gauge\nb 1\na{x=\"2\"} 1\n", "split"},
    {"UntypedFamilySplit", "a 1\nb 1\na{x=\"1\"} 1\n", "split"},
    {"HistogramPlainSample", "# TYPE h histogram\nh 1\n", "not _bucket, _sum or _count"},
    {"BucketWithoutLe", "# TYPE h histogram\nh_bucket 1\n", "without an le"},
    {"LeOutsideBucket",
     "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum{le=\"1\"} 1\nh_count 1\n",
     "le label outside"},
    {"BadLe", "# TYPE h histogram\nh_bucket{le=\"one\"} 1\n", "invalid le"},
    {"BucketsNotCumulative",
     "# TYPE h histogram\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"2\"} 4\nh_bucket{le=\"+Inf\"} "
     "5\nh_sum 1\nh_count 5\n",
     "not cumulative"},
    {"BucketsOutOfOrder",
     "# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} "
     "1\nh_sum 1\nh_count 1\n",
     "out of le order"},
    {"NoInfBucket", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", "+Inf"},
    {"InfBucketDiffersFromCount",
     "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
     "differs from _count"},
    {"HistogramWithoutSum", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n", "no _sum"},
    {"HistogramWithoutCount", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 2\n",
     "no _count"},
    {"HistogramSeriesWithoutCount",
     "# TYPE h histogram\nh_bucket{x=\"a\",le=\"+Inf\"} 1\nh_sum{x=\"a\"} 1\nh_count{x=\"a\"} "
     "1\nh_bucket{x=\"b\",le=\"+Inf\"} 1\nh_sum{x=\"b\"} 1\n",
     "no _count"},
    {"SummaryWithoutQuantile", "# TYPE s summary\ns 1\ns_sum 1\ns_count 1\n", "quantile"},
};

INSTANTIATE_TEST_SUITE_P(Malformed, PrometheusParserRejects, ::testing::ValuesIn(kMalformed),
                         [](const auto& test) { return std::string(test.param.name); });

}  // namespace
}  // namespace natsfleet::testing
