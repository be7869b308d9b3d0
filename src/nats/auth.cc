#include "nats/auth.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

namespace natsfleet::nats {
namespace {

// The NKey encoding (nkeys' format): base32 without padding of a prefix, the key bytes and a
// CRC-16 (XMODEM) of both, little-endian. A seed's two prefix bytes carry 'S' and the key type.
constexpr std::string_view kBase32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
constexpr uint8_t kPrefixSeed = 18 << 3;  // 'S'
constexpr uint8_t kPrefixUser = 20 << 3;  // 'U'

uint16_t crc16(const uint8_t* data, size_t size) {
  uint16_t crc = 0;
  for (size_t i = 0; i < size; ++i) {
    crc ^= static_cast<uint16_t>(data[i] << 8);
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc & 0x8000) != 0 ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<uint16_t>(crc << 1);
  }
  return crc;
}

std::string base32(const std::vector<uint8_t>& bytes) {
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (uint8_t b : bytes) {
    buffer = (buffer << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += kBase32[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += kBase32[(buffer << (5 - bits)) & 31];
  return out;
}

std::optional<std::vector<uint8_t>> unbase32(std::string_view text) {
  std::vector<uint8_t> out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    const size_t v = kBase32.find(c);
    if (v == std::string_view::npos) return std::nullopt;
    buffer = (buffer << 5) | static_cast<uint32_t>(v);
    bits += 5;
    if (bits >= 8) {
      out.push_back(static_cast<uint8_t>(buffer >> (bits - 8)));
      bits -= 8;
    }
  }
  return out;
}

std::vector<uint8_t> with_crc(std::vector<uint8_t> bytes) {
  const uint16_t crc = crc16(bytes.data(), bytes.size());
  bytes.push_back(static_cast<uint8_t>(crc & 0xff));
  bytes.push_back(static_cast<uint8_t>(crc >> 8));
  return bytes;
}

Result<std::string> bad_seed(std::string_view why) {
  return Result<std::string>(Errc::invalid_argument, "not a user NKey seed: " + std::string(why));
}

}  // namespace

Result<std::string> nkey_public_key(std::string_view seed) {
  auto bytes = unbase32(seed);
  if (!bytes) return bad_seed("a character outside base32");
  if (bytes->size() != 2 + 32 + 2) return bad_seed("wrong length");
  const uint16_t crc = static_cast<uint16_t>((*bytes)[34] | ((*bytes)[35] << 8));
  if (crc16(bytes->data(), 34) != crc) return bad_seed("its checksum does not match");
  if (((*bytes)[0] & 0xf8) != kPrefixSeed) return bad_seed("it does not start with S");
  const auto type = static_cast<uint8_t>((((*bytes)[0] & 7) << 5) | (((*bytes)[1] & 0xf8) >> 3));
  if (type != kPrefixUser) return bad_seed("not a user key (SU...)");
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, bytes->data() + 2, 32),
      EVP_PKEY_free);
  std::vector<uint8_t> pub(1 + 32);
  size_t size = 32;
  if (!key || EVP_PKEY_get_raw_public_key(key.get(), pub.data() + 1, &size) != 1 || size != 32)
    return Result<std::string>(Errc::invalid_argument, "cannot derive the NKey's public key");
  pub[0] = kPrefixUser;
  return base32(with_crc(std::move(pub)));
}

std::string nkey_user_seed(const std::array<uint8_t, 32>& raw) {
  std::vector<uint8_t> bytes{static_cast<uint8_t>(kPrefixSeed | (kPrefixUser >> 5)),
                             static_cast<uint8_t>((kPrefixUser & 31) << 3)};
  bytes.insert(bytes.end(), raw.begin(), raw.end());
  return base32(with_crc(std::move(bytes)));
}

Result<std::string> read_secret_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Result<std::string>(Errc::invalid_argument, "cannot read " + std::string(what) + " " +
                                                           path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos)
    return Result<std::string>(Errc::invalid_argument,
                               std::string(what) + " " + path + " is empty");
  s = s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
  return s;
}

}  // namespace natsfleet::nats
