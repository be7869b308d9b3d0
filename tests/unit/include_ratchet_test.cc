// The ratchet of STYLE.md: only src/nats/ may include nats.c. The test walks the product's
// source folders and fails naming each file that includes it elsewhere.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
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

}  // namespace
