// The ratchets of STYLE.md: only src/nats/ may include nats.c, and a layer includes only the
// layers below it (CONTRIBUTING.md, "Layout"). Each test walks the product's source folders and
// fails naming each file that breaks the rule.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

TEST(IncludeRatchet, OnlySrcNatsIncludesNatsC) {
  const fs::path root = NATSFLEET_SOURCE_DIR;
  const std::regex include_nats(R"(#\s*include\s*[<"](nats/nats\.h|nats\.h)[>"])");
  std::vector<std::string> offenders;
  size_t scanned = 0;
  for (const char* folder : {"src", "include", "apps", "examples"}) {
    if (!fs::exists(root / folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      if (!entry.is_regular_file()) continue;
      const auto ext = entry.path().extension();
      if (ext != ".h" && ext != ".cc" && ext != ".hpp" && ext != ".cpp") continue;
      ++scanned;
      const auto rel = fs::relative(entry.path(), root).generic_string();
      if (rel.rfind("src/nats/", 0) == 0) continue;
      std::ifstream in(entry.path());
      std::string line;
      while (std::getline(in, line))
        if (std::regex_search(line, include_nats)) offenders.push_back(rel);
    }
  }
  EXPECT_GT(scanned, 10u) << "the ratchet found almost no sources: wrong root?";
  EXPECT_TRUE(offenders.empty()) << "nats.c included outside src/nats/: " << [&] {
    std::string all;
    for (const auto& o : offenders) all += o + " ";
    return all;
  }();
}

// What each folder of src/ may include besides itself and the public API (include/natsfleet):
// the layers below it. A new folder must be listed, or the test fails.
const std::map<std::string, std::set<std::string>>& allowed_layers() {
  static const std::map<std::string, std::set<std::string>> layers = [] {
    std::map<std::string, std::set<std::string>> l;
    l["base"] = {};
    l["nats"] = {"base"};
    l["net"] = {"base"};
    l["broker"] = {"base"};
    l["consume"] = {"base", "nats"};
    l["fleet"] = {"base", "nats", "consume"};
    l["relay"] = {"base", "nats", "net", "fleet"};
    l["health"] = {"base", "net", "fleet"};
    l["sinks"] = {"base", "nats", "consume", "fleet", "relay"};
    // The config parser builds the sinks' option structs (header-only) and the specs.
    l["config"] = {"base", "fleet", "sinks"};
    l["audit"] = {"base", "nats", "fleet", "config"};
    l["deadletters"] = {"base", "nats", "fleet", "config", "audit"};
    l["daemon"] = {"base",  "nats",   "net",   "broker", "consume", "fleet",
                   "relay", "health", "sinks", "config", "audit",   "deadletters"};
    l["demo"] = {"base", "nats", "broker", "fleet", "daemon"};
    return l;
  }();
  return layers;
}

TEST(IncludeRatchet, EachLayerIncludesOnlyTheLayersBelowIt) {
  const fs::path src = fs::path(NATSFLEET_SOURCE_DIR) / "src";
  const std::regex include_local(R"re(#\s*include\s*"([a-z_]+)/[^"]+")re");
  const auto& layers = allowed_layers();
  std::vector<std::string> offenders;
  size_t scanned = 0;
  for (const auto& folder : fs::directory_iterator(src)) {
    if (!folder.is_directory()) continue;
    const std::string layer = folder.path().filename().string();
    auto allowed = layers.find(layer);
    if (allowed == layers.end()) {
      offenders.push_back("src/" + layer + " (a folder missing from allowed_layers())");
      continue;
    }
    for (const auto& entry : fs::recursive_directory_iterator(folder.path())) {
      if (!entry.is_regular_file()) continue;
      const auto ext = entry.path().extension();
      if (ext != ".h" && ext != ".cc") continue;
      ++scanned;
      std::ifstream in(entry.path());
      std::string line;
      std::smatch m;
      while (std::getline(in, line)) {
        if (!std::regex_search(line, m, include_local)) continue;
        const std::string target = m[1];
        if (target == layer || target == "natsfleet" || !layers.count(target)) continue;
        if (!allowed->second.count(target))
          offenders.push_back(fs::relative(entry.path(), src).generic_string() + " includes " +
                              target + "/");
      }
    }
  }
  EXPECT_GT(scanned, 50u) << "the ratchet found almost no sources: wrong root?";
  EXPECT_TRUE(offenders.empty()) << "a layer reaches above itself: " << [&] {
    std::string all;
    for (const auto& o : offenders) all += "\n  " + o;
    return all;
  }();
}

}  // namespace
