#include "nats/auth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace natsfleet::nats {
namespace {

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// RFC 4648 base32, written apart from the code under test.
std::vector<uint8_t> decode_base32(const std::string& text) {
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::vector<uint8_t> out;
  unsigned value = 0;
  int bits = 0;
  for (char c : text) {
    value = (value << 5) | static_cast<unsigned>(alphabet.find(c));
    bits += 5;
    if (bits >= 8) {
      out.push_back(static_cast<uint8_t>((value >> (bits - 8)) & 0xff));
      bits -= 8;
    }
  }
  return out;
}

TEST(NKey, ThePublicKeyOfASeedIsItsEd25519KeyPrefixedU) {
  // RFC 8032, section 7.1, test 1.
  const auto secret = from_hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
  const auto expected =
      from_hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
  std::array<uint8_t, 32> raw{};
  std::copy(secret.begin(), secret.end(), raw.begin());
  const std::string seed = nkey_user_seed(raw);
  EXPECT_EQ(seed.size(), 58u);
  EXPECT_EQ(seed.substr(0, 2), "SU");
  auto key = nkey_public_key(seed);
  ASSERT_TRUE(key) << key.error().describe();
  EXPECT_EQ(key->size(), 56u);
  EXPECT_EQ(key->front(), 'U');
  const auto bytes = decode_base32(*key);
  ASSERT_EQ(bytes.size(), 35u);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + 1, bytes.begin() + 33), expected);
}

TEST(NKey, WhatIsNotAUserSeedIsRefusedWithoutEchoingIt) {
  std::array<uint8_t, 32> raw{};
  raw.fill(7);
  std::string seed = nkey_user_seed(raw);
  ASSERT_TRUE(nkey_public_key(seed));
  std::string flipped = seed;
  flipped[20] = flipped[20] == 'A' ? 'B' : 'A';
  EXPECT_NE(nkey_public_key(flipped).error().describe().find("checksum"), std::string::npos);
  EXPECT_NE(nkey_public_key(seed.substr(0, 40)).error().describe().find("length"),
            std::string::npos);
  EXPECT_NE(nkey_public_key("su-not-base32").error().describe().find("base32"), std::string::npos);
  const auto error = nkey_public_key(flipped).error().describe();
  EXPECT_EQ(error.find(flipped), std::string::npos);
}

TEST(SecretFile, IsReadWithoutSurroundingWhitespaceAndAnEmptyOneIsAnError) {
  const std::string path = "/tmp/natsfleet-secret-" + std::to_string(getpid());
  std::ofstream(path) << "  s3cret value\n\n";
  EXPECT_EQ(read_secret_file(path, "password file").value(), "s3cret value");
  std::ofstream(path) << "\n";
  auto empty = read_secret_file(path, "password file");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().describe(), "password file " + path + " is empty");
  std::remove(path.c_str());
  auto missing = read_secret_file(path, "token file");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().describe(),
            "cannot read token file " + path + ": No such file or directory");
}

}  // namespace
}  // namespace natsfleet::nats
