#include "deadletters/listing.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>

#include "natsfleet/redact.h"

namespace natsfleet::deadletters {
namespace {

constexpr size_t kColumns = 8;
using Row = std::array<std::string, kColumns>;

// Header values come from other programs: a line break or a control character would break the
// table (or fake a line of it).
std::string cell(const std::string& text) {
  if (text.empty()) return "-";
  std::string out = text;
  for (char& c : out)
    if (std::iscntrl(static_cast<unsigned char>(c))) c = ' ';
  return out;
}

std::string when(const DeadLetterEntry& e) {
  return short_time(e.dead_lettered_at.empty() ? e.stored_at : e.dead_lettered_at);
}

std::string origin(const DeadLetterEntry& e) {
  if (e.origin_stream.empty() && e.origin_seq.empty()) return "-";
  return cell(e.origin_stream) + ":" + cell(e.origin_seq);
}

std::optional<uint64_t> number(const std::string& text) {
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

nlohmann::ordered_json number_or_null(const std::string& text) {
  auto value = number(text);
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json();
}

std::string counted(size_t n) { return fmt::format("{} dead letter{}", n, n == 1 ? "" : "s"); }

}  // namespace

std::string short_time(const std::string& rfc3339) {
  const size_t dot = rfc3339.find('.');
  if (dot == std::string::npos) return rfc3339;
  size_t end = dot + 1;
  while (end < rfc3339.size() && std::isdigit(static_cast<unsigned char>(rfc3339[end]))) ++end;
  const size_t keep = std::min(end, dot + 4);
  return rfc3339.substr(0, keep) + rfc3339.substr(end);
}

std::string render_table(const std::vector<Listing>& listings) {
  std::string out;
  for (const Listing& listing : listings) {
    if (!out.empty()) out += '\n';
    if (listing.entries.empty()) {
      out += fmt::format("{}: no dead letters in stream {}\n", listing.subject, listing.stream);
      continue;
    }
    out += fmt::format("{}: {} in stream {}\n", listing.subject, counted(listing.entries.size()),
                       listing.stream);
    std::vector<Row> rows = {{"SEQ", "DEAD-LETTERED AT", "SUBSCRIPTION", "ORIGIN SUBJECT", "ORIGIN",
                              "DELIVERIES", "BYTES", "REASON"}};
    for (const DeadLetterEntry& e : listing.entries)
      rows.push_back({std::to_string(e.seq), cell(when(e)), cell(e.subscription),
                      cell(e.origin_subject), origin(e), cell(e.deliveries),
                      std::to_string(e.data.size()), cell(redact(e.reason))});
    std::array<size_t, kColumns> widths{};
    for (const Row& row : rows)
      for (size_t i = 0; i < kColumns; ++i) widths[i] = std::max(widths[i], row[i].size());
    for (const Row& row : rows) {
      std::string line;
      for (size_t i = 0; i + 1 < kColumns; ++i) line += fmt::format("{:<{}}  ", row[i], widths[i]);
      line += row[kColumns - 1];
      out += line + '\n';
    }
  }
  return out;
}

std::string render_json(const std::vector<Listing>& listings) {
  nlohmann::ordered_json subjects = nlohmann::ordered_json::array();
  for (const Listing& listing : listings) {
    nlohmann::ordered_json entries = nlohmann::ordered_json::array();
    for (const DeadLetterEntry& e : listing.entries)
      entries.push_back({{"seq", e.seq},
                         {"time", when(e)},
                         {"stored_at", e.stored_at},
                         {"subscription", e.subscription},
                         {"origin_subject", e.origin_subject},
                         {"origin_stream", e.origin_stream},
                         {"origin_seq", number_or_null(e.origin_seq)},
                         {"deliveries", number_or_null(e.deliveries)},
                         {"reason", redact(e.reason)},
                         {"bytes", e.data.size()}});
    subjects.push_back({{"subject", listing.subject},
                        {"stream", listing.stream},
                        {"count", listing.entries.size()},
                        {"dead_letters", std::move(entries)}});
  }
  return nlohmann::ordered_json({{"subjects", std::move(subjects)}}).dump();
}

}  // namespace natsfleet::deadletters
