// include/natsfleet is the whole public API (STYLE.md): its headers include only the standard
// library and each other, and name no internal namespace. Each one also compiles on its own with
// include/ as the only include directory: tests/unit/CMakeLists.txt builds a translation unit per
// header (natsfleet_public_headers), which this test depends on.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".h" || ext == ".cc")) files.push_back(entry.path());
  }
  return files;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string all;
  for (const auto& l : lines) all += "\n  " + l;
  return all;
}

// "header.h:line: text" for each line of a public header that `matches`.
std::vector<std::string> public_header_lines(
    const std::function<bool(const std::string&)>& matches) {
  std::vector<std::string> found;
  for (const auto& header : files_under(fs::path(NATSFLEET_SOURCE_DIR) / "include" / "natsfleet")) {
    std::ifstream in(header);
    int number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      if (matches(line))
        found.push_back(header.filename().string() + ":" + std::to_string(number) + ": " + line);
    }
  }
  return found;
}

TEST(PublicHeaders, IncludeOnlyTheStandardLibraryAndEachOther) {
  const fs::path root = NATSFLEET_SOURCE_DIR;
  const std::regex include(R"re(^\s*#\s*include\s*([<"])([^>"]+)[>"])re");
  // A standard header has no extension and no directory.
  const std::regex standard(R"(^[a-z_]+$)");
  std::vector<std::string> offenders;
  const auto headers = files_under(root / "include" / "natsfleet");
  EXPECT_GE(headers.size(), 10u) << "almost no public headers found: wrong root?";
  for (const auto& header : headers) {
    std::ifstream in(header);
    int number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      const bool quoted = m[1] == "\"";
      const std::string path = m[2];
      const bool ok = quoted
                          ? path.rfind("natsfleet/", 0) == 0 && fs::exists(root / "include" / path)
                          : std::regex_match(path, standard);
      if (!ok)
        offenders.push_back(header.filename().string() + ":" + std::to_string(number) + ": " +
                            line);
    }
  }
  EXPECT_TRUE(offenders.empty()) << "public headers including more than natsfleet/ and the "
                                    "standard library:"
                                 << joined(offenders);
}

TEST(PublicHeaders, NameNoInternalNamespace) {
  // The layers' namespaces (src/<layer>) and the conventional one for hidden helpers.
  const std::regex internal(
      R"(\b(detail|nats|consume|fleet|relay|broker|config|sinks|health|audit|daemon|net|base)::)");
  const auto offenders = public_header_lines([&](const std::string& line) {
    return std::regex_search(line.substr(0, line.find("//")), internal);
  });
  EXPECT_TRUE(offenders.empty()) << "public headers naming internal types:" << joined(offenders);
}

// A user fills the option structs with designated initializers: GCC's -Wextra
// (-Wmissing-field-initializers) warns about every member left out that has no default member
// initializer, which breaks a -Werror build. So every public data member has one.
TEST(PublicHeaders, EveryPublicDataMemberHasADefaultInitializer) {
  // `  Type name;` with no initializer; private members end in '_'.
  const std::regex bare_member(
      R"(^\s+(const\s+)?[A-Za-z_][\w:<>, ]*[>\w]\s+[a-z_]\w*[a-z0-9];\s*(//.*)?$)");
  const std::regex not_a_member(R"(^\s+(return|using|friend|class|struct|enum|typename)\b)");
  const auto offenders = public_header_lines([&](const std::string& line) {
    return std::regex_match(line, bare_member) && !std::regex_search(line, not_a_member);
  });
  EXPECT_TRUE(offenders.empty()) << "public members without a default initializer (add {}):"
                                 << joined(offenders);
}

// The examples are what a user writes: public headers and their own files, nothing from src/.
TEST(PublicHeaders, ExamplesIncludeOnlyPublicHeaders) {
  const fs::path root = NATSFLEET_SOURCE_DIR;
  const std::regex quoted_include(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::vector<std::string> offenders;
  size_t scanned = 0;
  for (const auto& file : files_under(root / "examples")) {
    ++scanned;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, quoted_include)) continue;
      const std::string path = m[1];
      const bool ok = path.rfind("natsfleet/", 0) == 0 ? fs::exists(root / "include" / path)
                                                       : fs::exists(file.parent_path() / path);
      if (!ok) offenders.push_back(fs::relative(file, root).generic_string() + ": " + line);
    }
  }
  EXPECT_GT(scanned, 0u);
  EXPECT_TRUE(offenders.empty()) << "examples including internals:" << joined(offenders);
}

}  // namespace
