// The documentation and the parser agree: every key docs/reference/config.md lists is one the
// parser reads and the other way round, and every complete config in README.md and docs/ parses
// (a block whose first line is "# fragment" is a piece of one, and is skipped).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <stdlib.h>

#include "config/daemon_config.h"

namespace natsfleet::config {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = NATSFLEET_SOURCE_DIR;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The rows of the markdown tables under `heading` (their headers left out): cells, trimmed.
std::vector<std::vector<std::string>> table_after(const std::string& text,
                                                  const std::string& heading) {
  std::vector<std::vector<std::string>> rows;
  bool in_section = false;
  bool in_table = false;
  for (const std::string& line : lines_of(text)) {
    if (line.rfind("#", 0) == 0) in_section = line == heading;
    if (!in_section) continue;
    if (line.rfind("|", 0) != 0) {
      in_table = false;
      continue;
    }
    const bool header = !in_table;
    in_table = true;
    if (header) continue;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) {
      const auto first = cell.find_first_not_of(' ');
      const auto last = cell.find_last_not_of(' ');
      cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
    }
    if (cells.empty() || cells[0].rfind("---", 0) == 0) continue;
    rows.push_back(cells);
  }
  return rows;
}

// The `code` spans of a cell; ".x" after "a[].b" stands for "a[].x".
std::vector<std::string> keys_in(const std::string& cell) {
  std::vector<std::string> out;
  static const std::regex code("`([^`]+)`");
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), code); it != std::sregex_iterator();
       ++it) {
    std::string key = (*it)[1];
    if (key.rfind(".", 0) == 0 && !out.empty())
      key = out.front().substr(0, out.front().rfind('.')) + key;
    out.push_back(key);
  }
  return out;
}

TEST(Docs, TheConfigReferenceListsEveryKeyTheParserReadsAndNoOther) {
  const std::string reference = read(kSource / "docs/reference/config.md");
  ASSERT_FALSE(reference.empty());
  std::set<std::string> documented;
  for (const auto& row : table_after(reference, "## Keys"))
    for (const auto& key : keys_in(row.at(0))) documented.insert(key);

  const ConfigKeys keys = config_keys();
  std::set<std::string> parsed;
  for (const auto& k : keys.top)
    if (k != "health" && k != "work" && k != "broadcast") parsed.insert(k);
  for (const auto& k : keys.health) parsed.insert("health." + k);
  for (const auto& k : keys.work) parsed.insert("work[]." + k);
  for (const auto& k : keys.broadcast) parsed.insert("broadcast[]." + k);
  for (const auto& k : keys.declared_stream) parsed.insert("work[].stream." + k);
  EXPECT_EQ(documented, parsed);

  std::set<std::string> tls_documented;
  static const std::regex tls_key(R"((\w+) = ")");
  for (const auto& row : table_after(reference, "## Keys"))
    if (row.at(0) == "`tls`")
      for (auto it = std::sregex_iterator(row.at(3).begin(), row.at(3).end(), tls_key);
           it != std::sregex_iterator(); ++it)
        tls_documented.insert((*it)[1]);
  EXPECT_EQ(tls_documented, std::set<std::string>(keys.tls.begin(), keys.tls.end()));
}

TEST(Docs, TheConfigReferenceListsEverySinkKeyAndNoOther) {
  const std::string reference = read(kSource / "docs/reference/config.md");
  std::set<std::pair<std::string, std::string>> documented;
  for (const auto& row : table_after(reference, "## Sinks")) {
    if (row.size() != 5) continue;  // the table of every key a sink takes
    const auto types = keys_in(row.at(0));
    const auto key = keys_in(row.at(1));
    if (row.at(0) == "every sink") continue;  // `type`
    if (types.size() == 1 && key.size() == 1) documented.insert({types[0], key[0]});
  }
  std::set<std::pair<std::string, std::string>> parsed;
  for (const auto& [type, sink_keys] : config_keys().sinks)
    for (const auto& k : sink_keys)
      if (k != "type") parsed.insert({type, k});
  EXPECT_EQ(documented, parsed);
}

// Every ```toml block of every markdown file the project ships: (file:line, text).
std::vector<std::pair<std::string, std::string>> toml_blocks() {
  std::vector<fs::path> files = {kSource / "README.md", kSource / "CONTRIBUTING.md"};
  for (const auto& entry : fs::recursive_directory_iterator(kSource / "docs"))
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  std::vector<std::pair<std::string, std::string>> blocks;
  for (const auto& file : files) {
    const auto lines = lines_of(read(file));
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i] != "```toml") continue;
      std::string text;
      size_t j = i + 1;
      for (; j < lines.size() && lines[j] != "```"; ++j) text += lines[j] + "\n";
      blocks.emplace_back(fs::relative(file, kSource).string() + ":" + std::to_string(i + 2), text);
      i = j;
    }
  }
  return blocks;
}

TEST(Docs, EveryCompleteConfigInTheDocsParses) {
  const auto blocks = toml_blocks();
  int complete = 0;
  for (const auto& [where, text] : blocks) {
    if (text.rfind("# fragment", 0) == 0) continue;
    ++complete;
    // The environment a reader would give it: a broker URL for *_URL variables, a word otherwise.
    static const std::regex variable(R"(\$\{(\w+)\})");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), variable);
         it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[1];
      const bool url = name.find("URL") != std::string::npos;
      ASSERT_EQ(setenv(name.c_str(), url ? "nats://127.0.0.1:4222" : "value", 0), 0);
    }
    const auto parsed = parse_config(text, "example.toml");
    if (!parsed) ADD_FAILURE() << where << ": " << parsed.error().what();
  }
  EXPECT_GE(complete, 3) << "README.md and the daemon tutorial each show a whole config";
}

}  // namespace
}  // namespace natsfleet::config
