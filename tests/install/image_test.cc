// The container image `make image` builds (scripts/make-image.sh): its config as a runtime reads
// it, and its natsfleet run as the image says (user, command) in a chroot of the unpacked image
// against a real broker.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
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

// The image as the Image.Build fixture made it (tests/install/CMakeLists.txt), unpacked as a
// runtime would: bundle/config.json and bundle/rootfs.
class Image : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "unpacking the image and chroot into it need root";
    ASSERT_TRUE(fs::exists(NATSFLEET_IMAGE)) << NATSFLEET_IMAGE << ": run the Image.Build test";
    const std::string layout = scratch_.path() + "/oci";
    fs::create_directories(layout);
    auto untar = run_shell("tar -C " + layout + " -xf " + std::string(NATSFLEET_IMAGE));
    ASSERT_EQ(untar.code, 0) << explain(untar);
    auto unpack = run_shell("umoci unpack --image " + layout + ":0.1.0 " + bundle());
    ASSERT_EQ(unpack.code, 0) << explain(unpack);
    std::ifstream in(bundle() + "/config.json");
    config_ = nlohmann::json::parse(in);
  }

  std::string bundle() const { return scratch_.path() + "/bundle"; }
  std::string rootfs() const { return bundle() + "/rootfs"; }

  TempDir scratch_;
  nlohmann::json config_;
};

TEST_F(Image, RunsTheStrippedDaemonAsANonRootUserWithTheConfigItsKubernetesFilesMount) {
  const auto& process = config_["process"];
  EXPECT_EQ(process["args"],
            nlohmann::json::array({"/usr/bin/natsfleet", "run", "/etc/natsfleet/natsfleet.toml"}));
  EXPECT_EQ(process["user"]["uid"], 65532);  // deploy/kubernetes/deployment.yaml's runAsUser
  EXPECT_EQ(process["user"]["gid"], 65532);
  EXPECT_EQ(process["cwd"], "/var/lib/natsfleet");
  // Stripped: the debug information stays with the build.
  auto sections = run_shell("readelf -S " + rootfs() + "/usr/bin/natsfleet");
  ASSERT_EQ(sections.code, 0) << explain(sections);
  EXPECT_EQ(sections.out.find(".debug_info"), std::string::npos);
  auto license =
      run_shell("grep -c 'Apache License' " + rootfs() + "/usr/share/doc/natsfleet/copyright");
  EXPECT_EQ(license.code, 0) << explain(license);
}

TEST_F(Image, ItsNatsfleetConsumesFromABrokerAndStopsCleanlyOnSigterm) {
  NatsServer server;
  BrokerClient admin{server.url()};
  admin.create_stream("IMAGED", {"imaged.>"});
  std::ofstream(rootfs() + "/etc/natsfleet/natsfleet.toml")
      << "name = \"imaged\"\n"
      << "servers = [\"${NATS_URL}\"]\n"
      << "[health]\nlisten = \"127.0.0.1:0\"\n"
      << "[[work]]\nname = \"imaged-worker\"\nsubject = \"imaged.jobs\"\n"
      << "sink = { type = \"file\", path = \"/tmp/handled.jsonl\" }\n";
  const auto& process = config_["process"];
  const std::string user = std::to_string(process["user"]["uid"].get<int>()) + ":" +
                           std::to_string(process["user"]["gid"].get<int>());
  std::vector<std::string> argv{"env", "NATS_URL=" + server.url(), "chroot", "--userspec=" + user,
                                rootfs()};
  for (const auto& arg : process["args"]) argv.push_back(arg.get<std::string>());
  const std::string log = scratch_.path() + "/natsfleet.log";
  auto daemon = base::ChildProcess::start(argv, {.stderr_path = log});
  ASSERT_TRUE(daemon) << daemon.error().describe();
  admin.publish_many("imaged.jobs", 300);
  const std::string sink = rootfs() + "/tmp/handled.jsonl";
  EXPECT_TRUE(wait_for([&] { return read_sink_file(sink).records >= 300; }, 30s))
      << run_shell("cat " + log).out;
  EXPECT_EQ(read_sink_file(sink).records, 300u);
  daemon->signal(SIGTERM);
  const auto status = daemon->wait_for(20s);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << run_shell("cat " + log).out;
}

}  // namespace
}  // namespace natsfleet::testing
