#include "relay/member_token.h"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace natsfleet::relay {
namespace {

using namespace std::chrono_literals;
using std::chrono::system_clock;

constexpr std::string_view kSecret = "8f4f2c0e5b7d4a1f9e3c6b2a7d5e1f0c8b9a6d3e2f1c0b7a";

system_clock::time_point at(std::int64_t unix_seconds) {
  return system_clock::time_point(std::chrono::seconds(unix_seconds));
}

TEST(MemberToken, MintedTokenChecksUntilItsExpiry) {
  const std::string token = mint_member_token("alice@example", 2000000000, kSecret);
  EXPECT_EQ(token.rfind("alice@example.2000000000.", 0), 0u) << token;
  EXPECT_EQ(token.size(), std::string("alice@example.2000000000.").size() + 64);
  auto ok = check_member_token(token, kSecret, at(1999999999));
  EXPECT_EQ(ok.verdict, TokenVerdict::ok);
  EXPECT_EQ(ok.member, "alice@example");
  EXPECT_EQ(check_member_token(token, kSecret, at(2000000000)).verdict, TokenVerdict::expired);
  EXPECT_EQ(check_member_token(token, kSecret, at(2000000000)).member, "");
}

TEST(MemberToken, AnyChangeBreaksTheSignature) {
  const std::string token = mint_member_token("alice", 2000000000, kSecret);
  const auto now = at(1900000000);
  EXPECT_EQ(check_member_token(token, "another secret, also long enough to pass", now).verdict,
            TokenVerdict::bad_signature);
  std::string other_member = token;
  other_member.replace(0, 5, "mallo");
  EXPECT_EQ(check_member_token(other_member, kSecret, now).verdict, TokenVerdict::bad_signature);
  std::string later = token;
  later.replace(6, 1, "3");  // 3000000000: a longer life
  EXPECT_EQ(check_member_token(later, kSecret, now).verdict, TokenVerdict::bad_signature);
  std::string flipped = token;
  flipped.back() = flipped.back() == '0' ? '1' : '0';
  EXPECT_EQ(check_member_token(flipped, kSecret, now).verdict, TokenVerdict::bad_signature);
  // An expired token with a bad signature says nothing about its expiry.
  EXPECT_EQ(check_member_token(later, kSecret, at(2100000000)).verdict,
            TokenVerdict::bad_signature);
}

TEST(MemberToken, MalformedTokensAreRefused) {
  const std::string sig(64, 'a');
  for (const std::string& token : std::vector<std::string>{
           "", "alice", "alice.2000000000", "alice.2000000000." + sig.substr(1),
           "alice.2000000000." + std::string(64, 'g'), ".2000000000." + sig, "alice.." + sig,
           "alice.-5." + sig, "alice.12x." + sig, "al ice.2000000000." + sig,
           "a.b.2000000000." + sig, "alice.99999999999999999999." + sig}) {
    EXPECT_EQ(check_member_token(token, kSecret, at(0)).verdict, TokenVerdict::malformed) << token;
  }
}

TEST(MemberToken, UppercaseHexSignaturesAreAccepted) {
  std::string token = mint_member_token("bob", 2000000000, kSecret);
  for (auto i = token.rfind('.') + 1; i < token.size(); ++i)
    token[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(token[i])));
  EXPECT_EQ(check_member_token(token, kSecret, at(0)).verdict, TokenVerdict::ok);
}

// docs/reference/relay.md tells backends to mint tokens with openssl dgst; this is that recipe,
// run.
TEST(MemberToken, TheReadmeOpensslRecipeMintsTheSameToken) {
  const std::string command = "printf '%s' 'alice.2000000000' | openssl dgst -sha256 -hmac '" +
                              std::string(kSecret) + "' -r | cut -d' ' -f1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  ASSERT_TRUE(pipe);
  std::array<char, 128> out{};
  ASSERT_NE(std::fgets(out.data(), out.size(), pipe.get()), nullptr) << "is openssl installed?";
  std::string signature(out.data());
  while (!signature.empty() && signature.back() == '\n') signature.pop_back();
  const std::string token = "alice.2000000000." + signature;
  EXPECT_EQ(token, mint_member_token("alice", 2000000000, kSecret));
  EXPECT_EQ(check_member_token(token, kSecret, at(1900000000)).verdict, TokenVerdict::ok);
}

TEST(MemberToken, SecretFileTrailingLineBreaksAreNotPartOfTheSecret) {
  EXPECT_EQ(trim_secret("abc\n"), "abc");
  EXPECT_EQ(trim_secret("abc\r\n\n"), "abc");
  EXPECT_EQ(trim_secret(" abc \n"), " abc ");
}

}  // namespace
}  // namespace natsfleet::relay
