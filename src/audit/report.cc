#include "audit/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <string_view>

namespace natsfleet::audit {
namespace {

constexpr size_t kGap = 2;
constexpr size_t kMinWrapWidth = 20;  // below this a wrapped column is unreadable
constexpr size_t kColumns = 5;

using Row = std::array<std::string, kColumns>;

std::string counted(size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// Lines of at most `width` characters, broken at spaces; a word longer than a line is split.
std::vector<std::string> wrap(std::string_view text, size_t width) {
  std::vector<std::string> lines(1);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(start, end - start);
    start = end + 1;
    while (!word.empty()) {
      std::string& line = lines.back();
      const size_t room = line.empty() ? width : width - std::min(width, line.size() + 1);
      if (word.size() <= room) {
        if (!line.empty()) line += ' ';
        line += word;
        word = {};
      } else if (line.empty()) {
        line += word.substr(0, width);
        word.remove_prefix(width);
        lines.emplace_back();
      } else {
        lines.emplace_back();
      }
    }
  }
  return lines;
}

Row cells(const Finding& f) {
  return {f.stream.empty() ? "-" : f.stream, f.consumer, f.finding, f.evidence, f.action};
}

// The first three columns as wide as their widest cell; the last two split the rest.
std::array<size_t, kColumns> column_widths(const std::vector<Row>& rows, size_t width) {
  std::array<size_t, kColumns> widths{};
  for (const Row& row : rows)
    for (size_t i = 0; i < 3; ++i) widths[i] = std::max(widths[i], row[i].size());
  const size_t used = widths[0] + widths[1] + widths[2] + (kColumns - 1) * kGap;
  const size_t rest = width > used ? width - used : 0;
  widths[3] = std::max(kMinWrapWidth, rest / 2);
  widths[4] = std::max(kMinWrapWidth, rest - rest / 2);
  return widths;
}

void append_row(const Row& row, const std::array<size_t, kColumns>& widths, std::string& out) {
  std::array<std::vector<std::string>, kColumns> wrapped;
  size_t height = 1;
  for (size_t i = 0; i < kColumns; ++i) {
    wrapped[i] = i < 3 ? std::vector<std::string>{row[i]} : wrap(row[i], widths[i]);
    height = std::max(height, wrapped[i].size());
  }
  for (size_t line = 0; line < height; ++line) {
    std::string text;
    for (size_t i = 0; i < kColumns; ++i) {
      const std::string cell = line < wrapped[i].size() ? wrapped[i][line] : "";
      text += i + 1 < kColumns ? fmt::format("{:<{}}", cell, widths[i] + kGap) : cell;
    }
    text.erase(text.find_last_not_of(' ') + 1);
    out += text + '\n';
  }
}

}  // namespace

std::string summary_line(const AuditReport& report) {
  const std::string where = counted(report.streams, "stream", "streams") + ", " +
                            counted(report.consumers, "consumer", "consumers");
  if (report.findings.empty()) return "no findings in " + where;
  return counted(report.findings.size(), "finding", "findings") + " in " + where;
}

std::string render_table(const AuditReport& report, size_t width) {
  if (report.findings.empty()) return summary_line(report) + '\n';
  std::vector<Row> rows = {{"STREAM", "CONSUMER", "FINDING", "EVIDENCE", "WHAT TO DO"}};
  for (const Finding& f : report.findings) rows.push_back(cells(f));
  const auto widths = column_widths(rows, width);
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i) {
    // A blank line between findings: their wrapped cells would run together otherwise.
    if (i > 1) out += '\n';
    append_row(rows[i], widths, out);
  }
  out += '\n' + summary_line(report) + '\n';
  return out;
}

std::string render_json(const AuditReport& report) {
  nlohmann::ordered_json findings = nlohmann::ordered_json::array();
  for (const Finding& f : report.findings) {
    const nlohmann::ordered_json stream =
        f.stream.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(f.stream);
    findings.push_back({{"stream", stream},
                        {"consumer", f.consumer},
                        {"finding", f.finding},
                        {"evidence", f.evidence},
                        {"action", f.action}});
  }
  nlohmann::ordered_json j = {{"servers", report.servers},
                              {"streams", report.streams},
                              {"consumers", report.consumers},
                              {"findings", std::move(findings)}};
  return j.dump();
}

}  // namespace natsfleet::audit
