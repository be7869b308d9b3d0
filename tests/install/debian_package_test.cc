// The Debian packages `make package` builds (cpack -G DEB): their metadata and contents as dpkg
// sees them, the systemd unit as systemd-analyze reads it, lintian's verdict, and the packaged
// binary run from an extracted tree against a real broker.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/child_process.h"
#include "support/broker_client.h"
#include "support/daemon_process.h"
#include "support/nats_server.h"
#include "support/wait_for.h"

namespace natsfleet::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

constexpr const char* kDaemon = "natsfleet_0.1.0_amd64.deb";
constexpr const char* kLib = "libnatsfleet0.1_0.1.0_amd64.deb";
constexpr const char* kDev = "libnatsfleet-dev_0.1.0_amd64.deb";

// The three packages, as the DebianPackage.Build fixture built them for this ctest run
// (tests/install/CMakeLists.txt). Run on its own, this binary builds them when they are missing.
class DebianPackage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = NATSFLEET_PACKAGE_DIR;
    const bool present = fs::exists(dir + "/" + kDaemon) && fs::exists(dir + "/" + kLib) &&
                         fs::exists(dir + "/" + kDev);
    built_ = new CliOutcome(present ? CliOutcome{.code = 0}
                                    : run_shell("cd " + std::string(NATSFLEET_BUILD_DIR) + " && " +
                                                NATSFLEET_CPACK + " -G DEB -B " + dir));
  }
  static void TearDownTestSuite() { delete built_; }
  void SetUp() override { ASSERT_EQ(built_->code, 0) << explain(*built_); }

  static std::string deb(const char* name) {
    return std::string(NATSFLEET_PACKAGE_DIR) + "/" + name;
  }
  static std::string field(const char* package, const char* name) {
    return run_shell("dpkg-deb -f " + deb(package) + " " + name).out;
  }
  static std::string contents(const char* package) {
    return run_shell("dpkg-deb -c " + deb(package)).out;
  }
  // The package unpacked (dpkg -x) into a fresh directory; returns it.
  static std::string extract(const char* package, const std::string& into) {
    const CliOutcome x = run_shell("dpkg -x " + deb(package) + " " + into);
    EXPECT_EQ(x.code, 0) << explain(x);
    return into;
  }

  static CliOutcome* built_;
  TempDir scratch_;  // what a case unpacks
};
CliOutcome* DebianPackage::built_ = nullptr;

TEST_F(DebianPackage, TheDaemonPackageDependsOnWhatItLinksAndRecommendsTheBroker) {
  EXPECT_EQ(field(kDaemon, "Package"), "natsfleet\n");
  EXPECT_EQ(field(kDaemon, "Version"), "0.1.0\n");
  const std::string depends = field(kDaemon, "Depends");
  for (const char* dependency : {"libnats3.4", "adduser", "libc6", "libstdc++6", "libspdlog1"})
    EXPECT_TRUE(has(depends, dependency)) << dependency << " in " << depends;
  EXPECT_EQ(field(kDaemon, "Recommends"), "nats-server\n");
  const std::string files = contents(kDaemon);
  for (const char* path :
       {"./usr/bin/natsfleet", "./usr/lib/systemd/system/natsfleet@.service",
        "./usr/share/man/man1/natsfleet.1.gz", "./usr/share/man/man5/natsfleet.toml.5.gz",
        "./usr/share/doc/natsfleet/copyright", "./usr/share/doc/natsfleet/changelog.gz",
        "./usr/share/doc/natsfleet/examples/example.toml",
        "./usr/share/doc/natsfleet/docs/reference/config.md.gz",
        "./usr/share/bash-completion/completions/natsfleet",
        "./usr/share/zsh/vendor-completions/_natsfleet"})
    EXPECT_TRUE(has(files, path)) << path << " in\n" << files;
  const std::string scripts = run_shell("dpkg-deb -I " + deb(kDaemon)).out;
  EXPECT_TRUE(has(scripts, "postinst")) << scripts;
}

TEST_F(DebianPackage, TheLibraryAndDevelopmentPackagesSplitAsDebianDoes) {
  EXPECT_EQ(field(kLib, "Section"), "libs\n");
  EXPECT_TRUE(has(field(kLib, "Depends"), "libnats3.4"));
  const std::string lib_files = contents(kLib);
  EXPECT_TRUE(has(lib_files, "./usr/" + std::string(NATSFLEET_LIBDIR) + "/libnatsfleet.so.0.1.0"))
      << lib_files;
  EXPECT_FALSE(has(lib_files, "include/")) << lib_files;
  const std::string soname =
      run_shell("dpkg-deb --ctrl-tarfile " + deb(kLib) + " | tar -xO ./shlibs").out;
  EXPECT_EQ(soname, "libnatsfleet 0.1 libnatsfleet0.1 (= 0.1.0)\n");

  EXPECT_TRUE(has(field(kDev, "Depends"), "libnatsfleet0.1 (= 0.1.0)"));
  const std::string dev_files = contents(kDev);
  const std::string lib = "./usr/" + std::string(NATSFLEET_LIBDIR);
  for (const std::string& path :
       {std::string("./usr/include/natsfleet/natsfleet.h"), lib + "/libnatsfleet.a",
        lib + "/libnatsfleet.so -> libnatsfleet.so.0.1",
        lib + "/cmake/natsfleet/natsfleetConfig.cmake", lib + "/pkgconfig/natsfleet.pc"})
    EXPECT_TRUE(has(dev_files, path)) << path << " in\n" << dev_files;
  // The static library keeps its symbols (stripped of debug information only).
  const std::string root = extract(kDev, scratch_.path() + "/dev-root");
  const CliOutcome symbols = run_shell("nm -C --defined-only " + root + "/usr/" + NATSFLEET_LIBDIR +
                                       "/libnatsfleet.a | grep -c 'Fleet::start'");
  EXPECT_NE(symbols.out, "0\n") << explain(symbols);
}

TEST_F(DebianPackage, TheUnitRunsOneInstancePerConfigUnderSystemdsWatch) {
  const std::string root = extract(kDaemon, scratch_.path() + "/unit-root");
  std::ifstream file(root + "/usr/lib/systemd/system/natsfleet@.service");
  const std::string unit((std::istreambuf_iterator<char>(file)), {});
  for (const char* line :
       {"Type=notify", "WatchdogSec=", "ExecStart=/usr/bin/natsfleet run /etc/natsfleet/%i.toml",
        "Restart=on-failure", "RestartPreventExitStatus=2", "User=natsfleet",
        "ProtectSystem=strict", "NoNewPrivileges=yes", "StateDirectory=natsfleet/%i"})
    EXPECT_TRUE(has(unit, line)) << line << " in\n" << unit;
  if (run_shell("command -v systemd-analyze").code != 0) GTEST_SKIP() << "no systemd-analyze";
  // An instance of the template as `systemctl start natsfleet@example` loads it, its binary and
  // config at the extracted tree's paths (systemd-analyze checks that they exist).
  const std::string units = scratch_.path() + "/units";
  fs::create_directories(units);
  fs::create_directories(root + "/etc/natsfleet");
  fs::copy_file(root + "/usr/share/doc/natsfleet/examples/example.toml",
                root + "/etc/natsfleet/example.toml");
  const CliOutcome placed = run_shell(
      "sed -e 's|/usr/bin/natsfleet|" + root + "/usr/bin/natsfleet|' -e 's| /etc/| " + root +
      "/etc/|; s|=/etc/|=" + root + "/etc/|' " + root +
      "/usr/lib/systemd/system/natsfleet@.service > " + units + "/natsfleet@example.service");
  ASSERT_EQ(placed.code, 0) << explain(placed);
  const CliOutcome verified =
      run_shell("SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no " + units +
                "/natsfleet@example.service");
  EXPECT_EQ(verified.code, 0) << explain(verified);
  EXPECT_EQ(verified.out + verified.err, "") << explain(verified);
}

TEST_F(DebianPackage, LintianFindsNothingBeyondItsExplainedOverrides) {
  if (run_shell("command -v lintian").code != 0) GTEST_SKIP() << "no lintian";
  const CliOutcome lint = run_shell("lintian --tag-display-limit 0 " + deb(kDaemon) + " " +
                                    deb(kLib) + " " + deb(kDev));
  EXPECT_EQ(lint.code, 0) << explain(lint);
  EXPECT_EQ(lint.out, "") << explain(lint);
}

TEST_F(DebianPackage, ThePackagedBinaryRunsFromAnExtractedTree) {
  const std::string root = extract(kDaemon, scratch_.path() + "/run-root");
  const std::string natsfleet = root + "/usr/bin/natsfleet";
  const CliOutcome version = run_shell(natsfleet + " version");
  ASSERT_EQ(version.code, 0) << explain(version);
  EXPECT_TRUE(has(version.out, "0.1.0")) << version.out;
  // The sample config is one `lint` passes.
  const CliOutcome lint =
      run_shell(natsfleet + " lint " + root + "/usr/share/doc/natsfleet/examples/example.toml");
  EXPECT_EQ(lint.code, 0) << explain(lint);

  NatsServer server;
  BrokerClient admin{server.url()};
  admin.create_stream("PACKAGED", {"packaged.>"});
  const std::string sink = root + "/handled.jsonl";
  const std::string config = root + "/packaged.toml";
  std::ofstream(config) << "name = \"packaged\"\n"
                        << "servers = [\"" << server.url() << "\"]\n"
                        << "[health]\nlisten = \"127.0.0.1:0\"\n"
                        << "[[work]]\nname = \"packaged-worker\"\nsubject = \"packaged.jobs\"\n"
                        << "sink = { type = \"file\", path = \"" << sink << "\" }\n";
  auto daemon = base::ChildProcess::start({natsfleet, "run", config},
                                          {.stderr_path = root + "/natsfleet.log"});
  ASSERT_TRUE(daemon) << daemon.error().describe();
  admin.publish_many("packaged.jobs", 300);
  EXPECT_TRUE(wait_for([&] { return read_sink_file(sink).records >= 300; }, 30s))
      << run_shell("cat " + root + "/natsfleet.log").out;
  EXPECT_EQ(read_sink_file(sink).records, 300u);
  daemon->signal(SIGTERM);
  const auto status = daemon->wait_for(20s);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
}

}  // namespace
}  // namespace natsfleet::testing
