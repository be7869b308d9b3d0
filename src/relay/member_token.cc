#include "relay/member_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <charconv>

#include "relay/member_route.h"

namespace natsfleet::relay {

namespace {

constexpr std::size_t kDigestBytes = 32;  // SHA-256
constexpr std::size_t kMaxExpiryDigits = 19;

using Digest = std::array<unsigned char, kDigestBytes>;

bool hmac_sha256(std::string_view secret, std::string_view message, Digest& out) {
  unsigned int length = 0;
  const unsigned char* done = HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                                   reinterpret_cast<const unsigned char*>(message.data()),
                                   message.size(), out.data(), &length);
  return done != nullptr && length == kDigestBytes;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool decode_hex(std::string_view hex, Digest& out) {
  if (hex.size() != 2 * kDigestBytes) return false;
  for (std::size_t i = 0; i < kDigestBytes; ++i) {
    const int hi = hex_digit(hex[2 * i]);
    const int lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

}  // namespace

TokenCheck check_member_token(std::string_view token, std::string_view secret,
                              std::chrono::system_clock::time_point now) {
  TokenCheck check;
  const auto last_dot = token.rfind('.');
  if (last_dot == std::string_view::npos) return check;
  const std::string_view signed_part = token.substr(0, last_dot);
  Digest given{};
  if (!decode_hex(token.substr(last_dot + 1), given)) return check;
  const auto member_dot = signed_part.find('.');
  if (member_dot == std::string_view::npos) return check;
  const std::string_view member = signed_part.substr(0, member_dot);
  const std::string_view expiry_text = signed_part.substr(member_dot + 1);
  std::int64_t expiry = 0;
  const auto [end, ec] =
      std::from_chars(expiry_text.data(), expiry_text.data() + expiry_text.size(), expiry);
  if (!valid_member_id(member) || expiry_text.empty() || expiry_text.size() > kMaxExpiryDigits ||
      ec != std::errc() || end != expiry_text.data() + expiry_text.size() || expiry < 0) {
    return check;
  }
  Digest expected{};
  if (!hmac_sha256(secret, signed_part, expected)) return check;
  if (CRYPTO_memcmp(expected.data(), given.data(), kDigestBytes) != 0) {
    check.verdict = TokenVerdict::bad_signature;
    return check;
  }
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  if (seconds >= expiry) {
    check.verdict = TokenVerdict::expired;
    return check;
  }
  check.verdict = TokenVerdict::ok;
  check.member = std::string(member);
  return check;
}

std::string mint_member_token(std::string_view member, std::int64_t expiry_unix_seconds,
                              std::string_view secret) {
  std::string token(member);
  token += '.';
  token += std::to_string(expiry_unix_seconds);
  Digest digest{};
  if (!hmac_sha256(secret, token, digest)) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  token += '.';
  for (const unsigned char byte : digest) {
    token += kHex[byte >> 4];
    token += kHex[byte & 0x0f];
  }
  return token;
}

std::string_view verdict_name(TokenVerdict verdict) {
  switch (verdict) {
    case TokenVerdict::ok:
      return "ok";
    case TokenVerdict::malformed:
      return "malformed";
    case TokenVerdict::bad_signature:
      return "bad_signature";
    case TokenVerdict::expired:
      return "expired";
  }
  return "malformed";
}

std::string trim_secret(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace natsfleet::relay
