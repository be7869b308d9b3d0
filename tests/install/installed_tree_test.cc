// natsfleet as a user gets it from `cmake --install`: a program outside the tree, built with
// find_package(natsfleet) (shared and static) and with pkg-config, consumes from a real broker.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/broker_client.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"

namespace natsfleet::testing {
namespace {

namespace fs = std::filesystem;

// "LIB/x" -> the library directory's x (lib/x86_64-linux-gnu/x on Debian).
std::string in_libdir(const std::string& path) {
  return path.rfind("LIB/", 0) == 0 ? std::string(NATSFLEET_LIBDIR) + path.substr(3) : path;
}

// One installed tree per test, in a directory of its own.
class InstalledTree : public ::testing::Test {
 protected:
  void SetUp() override {
    const CliOutcome installed = run_shell(std::string(NATSFLEET_CMAKE) + " --install " +
                                           NATSFLEET_BUILD_DIR + " --prefix " + prefix());
    ASSERT_EQ(installed.code, 0) << explain(installed);
    admin.create_stream("INSTALLED", {"installed.>"});
  }

  std::string prefix() const { return dir.path() + "/prefix"; }

  // Runs a consumer built against the installed tree on 200 published messages.
  void expect_consumes(const std::string& binary) {
    admin.publish_many("installed.jobs", 200);
    const CliOutcome run = run_shell(binary + " " + server.url() + " installed.jobs 200");
    EXPECT_EQ(run.code, 0) << explain(run);
    EXPECT_NE(run.out.find("handled 200"), std::string::npos) << explain(run);
  }

  NatsServer server;
  BrokerClient admin{server.url()};
  TempDir dir;
};

TEST_F(InstalledTree, HoldsTheLibraryHeadersPackageFilesBinaryAndManPage) {
  for (const char* path :
       {"include/natsfleet/natsfleet.h", "include/natsfleet/relay.h", "LIB/libnatsfleet.a",
        "LIB/libnatsfleet.so", "LIB/libnatsfleet.so.0.1",
        "LIB/cmake/natsfleet/natsfleetConfig.cmake",
        "LIB/cmake/natsfleet/natsfleetConfigVersion.cmake", "LIB/pkgconfig/natsfleet.pc",
        "bin/natsfleet", "share/man/man1/natsfleet.1.gz", "share/man/man5/natsfleet.toml.5.gz",
        "lib/systemd/system/natsfleet@.service", "share/doc/natsfleet/examples/example.toml"})
    EXPECT_TRUE(fs::exists(prefix() + "/" + in_libdir(path))) << in_libdir(path);
  // The unit names the binary and the config directory under this prefix.
  std::ifstream unit(prefix() + "/lib/systemd/system/natsfleet@.service");
  const std::string text((std::istreambuf_iterator<char>(unit)), {});
  EXPECT_NE(text.find("ExecStart=" + prefix() + "/bin/natsfleet run " + prefix() +
                      "/etc/natsfleet/%i.toml"),
            std::string::npos)
      << text;
  // Nothing of natsfleet's own tree in the headers a user compiles.
  const CliOutcome leaks = run_shell("grep -rhE '#include \"' " + prefix() + "/include/natsfleet" +
                                     " | grep -v '#include \"natsfleet/' || true");
  EXPECT_EQ(leaks.out, "") << leaks.out;
  const CliOutcome version = run_shell(prefix() + "/bin/natsfleet version");
  EXPECT_EQ(version.code, 0) << explain(version);
  EXPECT_NE(version.out.find("0.1.0"), std::string::npos) << version.out;
}

TEST_F(InstalledTree, AProgramBuiltWithFindPackageConsumesSharedAndStatic) {
  const std::string build = dir.path() + "/cmake-build";
  const CliOutcome configured = run_shell(
      std::string(NATSFLEET_CMAKE) + " -S " + NATSFLEET_SOURCE_DIR + "/tests/install/consumer -B " +
      build + " -G Ninja -DCMAKE_CXX_COMPILER=" + NATSFLEET_CXX +
      " -DCMAKE_PREFIX_PATH=" + prefix());
  ASSERT_EQ(configured.code, 0) << explain(configured);
  const CliOutcome built = run_shell(std::string(NATSFLEET_CMAKE) + " --build " + build);
  ASSERT_EQ(built.code, 0) << explain(built);
  // The shared one loads the installed library, not the build tree's.
  const CliOutcome linked = run_shell("ldd " + build + "/consumer | grep libnatsfleet");
  EXPECT_NE(linked.out.find(prefix() + "/" + NATSFLEET_LIBDIR + "/libnatsfleet.so.0.1"),
            std::string::npos)
      << linked.out;
  const CliOutcome static_linked = run_shell("ldd " + build + "/consumer_static");
  EXPECT_EQ(static_linked.out.find("libnatsfleet"), std::string::npos) << static_linked.out;
  expect_consumes(build + "/consumer");
  expect_consumes(build + "/consumer_static");
}

// The shared library's ABI is the public API alone, versioned: none of natsfleet's internals,
// nor the Boost, fmt, JSON or standard library code it instantiates, which a program linking
// other copies of them would otherwise bind to.
TEST_F(InstalledTree, TheSharedLibraryExportsThePublicApiAndNothingElse) {
  const std::string library = prefix() + "/" + in_libdir("LIB/libnatsfleet.so.0.1");
  const CliOutcome exported = run_shell("nm -D --defined-only -C " + library);
  ASSERT_EQ(exported.code, 0) << explain(exported);
  std::istringstream lines(exported.out);
  std::vector<std::string> symbols;
  for (std::string line; std::getline(lines, line);) {
    // "ADDRESS TYPE NAME@@VERSION"
    const size_t name_at = line.find(' ', line.find(' ') + 1);
    ASSERT_NE(name_at, std::string::npos) << line;
    symbols.push_back(line.substr(name_at + 1));
  }
  ASSERT_GT(symbols.size(), 20u) << exported.out;
  const std::regex public_symbol(
      R"(^((typeinfo|typeinfo name|vtable) for )?natsfleet::[A-Za-z_]+[^:].*@@NATSFLEET_0\.1$)");
  const std::regex internal_namespace(R"(natsfleet::[a-z_]+::)");
  for (const std::string& symbol : symbols) {
    if (symbol == "NATSFLEET_0.1") continue;  // the version node itself
    EXPECT_TRUE(std::regex_match(symbol, public_symbol)) << symbol;
    EXPECT_FALSE(std::regex_search(symbol.substr(0, symbol.find('(')), internal_namespace))
        << symbol;
  }
  for (const char* needed : {"natsfleet::Fleet::start()@@NATSFLEET_0.1",
                             "natsfleet::Message::in_progress() const@@NATSFLEET_0.1",
                             "natsfleet::jetstream_category()@@NATSFLEET_0.1",
                             "typeinfo for natsfleet::DownstreamUnavailable@@NATSFLEET_0.1"})
    EXPECT_NE(std::find(symbols.begin(), symbols.end(), needed), symbols.end()) << needed;
}

TEST_F(InstalledTree, AProgramBuiltWithPkgConfigConsumes) {
  const std::string env = "PKG_CONFIG_PATH=" + prefix() + "/" + NATSFLEET_LIBDIR + "/pkgconfig";
  const CliOutcome version = run_shell(env + " pkg-config --modversion natsfleet");
  ASSERT_EQ(version.code, 0) << explain(version);
  EXPECT_EQ(version.out, "0.1.0\n");
  const std::string binary = dir.path() + "/consumer-pc";
  const CliOutcome built = run_shell(std::string(NATSFLEET_CXX) + " -std=c++20 -o " + binary + " " +
                                     NATSFLEET_SOURCE_DIR + "/tests/install/consumer/consumer.cc" +
                                     " $(" + env + " pkg-config --cflags --libs natsfleet)" +
                                     " -Wl,-rpath," + prefix() + "/" + NATSFLEET_LIBDIR);
  ASSERT_EQ(built.code, 0) << explain(built);
  expect_consumes(binary);
}

}  // namespace
}  // namespace natsfleet::testing
