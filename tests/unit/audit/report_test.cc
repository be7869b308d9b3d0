// The table fits 120 columns with its cells aligned and wrapped; the JSON carries every field.
#include "audit/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace natsfleet::audit {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

AuditReport sample() {
  AuditReport r;
  r.servers = {"nats://127.0.0.1:4222"};
  r.streams = 3;
  r.consumers = 5;
  r.findings = {
      {"JOBS", "jobs-worker", "idle-pull",
       "5 pending, no pull waiting; delivered seq 10 and ack floor 10 unchanged over 3s",
       "no replica pulls: start one (natsfleet run), or delete the consumer if its work is gone"},
      {"", "mailer", "work-no-stream", "svc.toml:4: no stream holds subject 'mail.out'",
       "create a stream for the subject; natsfleet run waits until one exists"},
  };
  return r;
}

TEST(Report, SummaryCountsWithPlurals) {
  AuditReport r;
  r.streams = 1;
  r.consumers = 0;
  EXPECT_EQ(summary_line(r), "no findings in 1 stream, 0 consumers");
  r = sample();
  EXPECT_EQ(summary_line(r), "2 findings in 3 streams, 5 consumers");
  r.findings.pop_back();
  EXPECT_EQ(summary_line(r), "1 finding in 3 streams, 5 consumers");
}

TEST(Report, NoFindingsIsTheSummaryAlone) {
  AuditReport r;
  r.streams = 2;
  r.consumers = 4;
  EXPECT_EQ(render_table(r), "no findings in 2 streams, 4 consumers\n");
}

TEST(Report, TableColumnsAlignAndFit120Columns) {
  const auto lines = lines_of(render_table(sample()));
  ASSERT_GE(lines.size(), 5u);
  const std::string& header = lines[0];
  const size_t consumer = header.find("CONSUMER"), finding = header.find("FINDING"),
               evidence = header.find("EVIDENCE"), action = header.find("WHAT TO DO");
  ASSERT_EQ(header.rfind("STREAM", 0), 0u);
  ASSERT_TRUE(consumer < finding && finding < evidence && evidence < action) << header;
  EXPECT_EQ(lines[1].find("jobs-worker"), consumer);
  EXPECT_EQ(lines[1].find("idle-pull"), finding);
  EXPECT_EQ(lines[1].find("5 pending"), evidence);
  EXPECT_EQ(lines[1].find("no replica pulls"), action);
  for (const auto& line : lines) {
    EXPECT_LE(line.size(), 120u) << line;
    EXPECT_TRUE(line.empty() || line.back() != ' ') << "trailing spaces: '" << line << "'";
  }
  // A wrapped cell continues in its own column.
  EXPECT_EQ(lines[2].find_first_not_of(' '), evidence) << lines[2];
  // A finding without a stream shows a dash; the summary closes the table.
  EXPECT_NE(std::find_if(lines.begin(), lines.end(),
                         [](const std::string& l) { return l.rfind("-  ", 0) == 0; }),
            lines.end());
  EXPECT_EQ(lines.back(), "2 findings in 3 streams, 5 consumers");
}

TEST(Report, AWordLongerThanItsColumnIsSplit) {
  AuditReport r = sample();
  r.findings.resize(1);
  r.findings[0].evidence = std::string(150, 'x');
  for (const auto& line : lines_of(render_table(r))) EXPECT_LE(line.size(), 120u) << line;
}

TEST(Report, JsonCarriesEveryFieldAndNullForNoStream) {
  auto j = nlohmann::json::parse(render_json(sample()));
  EXPECT_EQ(j["servers"], nlohmann::json::array({"nats://127.0.0.1:4222"}));
  EXPECT_EQ(j["streams"], 3);
  EXPECT_EQ(j["consumers"], 5);
  ASSERT_EQ(j["findings"].size(), 2u);
  const auto& f = j["findings"][0];
  EXPECT_EQ(f["stream"], "JOBS");
  EXPECT_EQ(f["consumer"], "jobs-worker");
  EXPECT_EQ(f["finding"], "idle-pull");
  EXPECT_EQ(f["evidence"], sample().findings[0].evidence);
  EXPECT_EQ(f["action"], sample().findings[0].action);
  EXPECT_TRUE(j["findings"][1]["stream"].is_null());
}

}  // namespace
}  // namespace natsfleet::audit
