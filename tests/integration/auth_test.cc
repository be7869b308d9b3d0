// A broker that wants a password, a token or a user NKey: the fleet connects with the secret
// read from its file; a secret the broker refuses is named in the health and never connects.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "nats/auth.h"
#include "natsfleet/fleet.h"
#include "support/fast_fleet.h"
#include "support/nats_server.h"
#include "support/wait_for.h"

namespace natsfleet::testing {
namespace {

// A file holding `text`, removed with it.
class SecretFile {
 public:
  SecretFile(const std::string& name, const std::string& text)
      : path_("/tmp/natsfleet-auth-" + std::to_string(getpid()) + "-" + name) {
    std::ofstream(path_) << text;
  }
  ~SecretFile() { std::remove(path_.c_str()); }
  void write(const std::string& text) const { std::ofstream(path_) << text; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

FleetOptions options_with(const NatsServer& server, BrokerAuth auth) {
  auto o = fast_options({server.url()}, "auth");
  o.auth = std::move(auth);
  return o;
}

bool connects(FleetOptions options) {
  Fleet fleet(std::move(options));
  EXPECT_TRUE(fleet.start());
  return wait_for([&] { return fleet.health().connected; }, 10s);
}

TEST(Auth, AUserWithThePasswordInItsFileConnectsAndAWrongOneIsNamed) {
  NatsServer server(
      {.extra_config = "authorization { users = [ { user: svc, password: \"p4ss w0rd\" } ] }\n"});
  SecretFile password("password", "p4ss w0rd\n");
  EXPECT_TRUE(connects(options_with(server, {.user = "svc", .password_file = password.path()})));

  SecretFile wrong("wrong", "guess\n");
  Fleet fleet(options_with(server, {.user = "svc", .password_file = wrong.path()}));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for(
      [&] {
        return fleet.health().broker_error.find("requires authentication") != std::string::npos;
      },
      15s))
      << fleet.health().broker_error;
  EXPECT_FALSE(fleet.health().connected);
  EXPECT_EQ(fleet.health().broker_error.find("guess"), std::string::npos);
  // nats.c gives up on refused credentials: the fatal reason says why, not only that it closed.
  ASSERT_TRUE(wait_for([&] { return !fleet.health().live; }, 15s));
  EXPECT_NE(fleet.health().fatal_reason.find("requires authentication"), std::string::npos)
      << fleet.health().fatal_reason;
}

TEST(Auth, ATokenIsReadAgainAtEveryConnectionAttempt) {
  NatsServer server({.extra_config = "authorization { token: \"first-token\" }\n"});
  SecretFile token("token", "first-token");
  Fleet fleet(options_with(server, {.token_file = token.path()}));
  ASSERT_TRUE(fleet.start());
  ASSERT_TRUE(wait_for([&] { return fleet.health().connected; }, 10s));
  // The token is replaced on both sides; the reconnect after the restart uses the file's new one.
  token.write("second-token\n");
  server.reload("authorization { token: \"second-token\" }\n");
  server.restart();
  ASSERT_TRUE(
      wait_for([&] { return fleet.health().reconnects > 0 && fleet.health().connected; }, 15s))
      << fleet.health().broker_error;
}

TEST(Auth, AUserNKeySeedFileConnects) {
  std::array<uint8_t, 32> raw{};
  std::random_device random;
  for (auto& b : raw) b = static_cast<uint8_t>(random());
  const std::string seed = nats::nkey_user_seed(raw);
  const std::string key = nats::nkey_public_key(seed).value();
  NatsServer server({.extra_config = "authorization { users = [ { nkey: " + key + " } ] }\n"});
  SecretFile seed_file("seed", seed + "\n");
  EXPECT_TRUE(connects(options_with(server, {.nkey_seed_file = seed_file.path()})));
}

TEST(Auth, AnUnreadableOrWrongSecretFileStopsTheStartNamingTheFile) {
  NatsServer server;
  Fleet missing(options_with(server, {.user = "svc", .password_file = "/nonexistent/password"}));
  auto started = missing.start();
  ASSERT_FALSE(started);
  EXPECT_NE(started.error().describe().find("/nonexistent/password"), std::string::npos);
  SecretFile not_a_seed("bad-seed", "SAAFAKE\n");
  Fleet bad(options_with(server, {.nkey_seed_file = not_a_seed.path()}));
  started = bad.start();
  ASSERT_FALSE(started);
  EXPECT_NE(started.error().describe().find("not a user NKey seed"), std::string::npos)
      << started.error().describe();
  EXPECT_EQ(started.error().describe().find("SAAFAKE"), std::string::npos);
}

}  // namespace
}  // namespace natsfleet::testing
