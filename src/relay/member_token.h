// Member tokens: how a backend tells the WebSocket gateway which member a browser is, without the
// gateway knowing its users. The token is `<member>.<expiry>.<signature>`: expiry in Unix seconds,
// signature the lowercase hex HMAC-SHA256 of `<member>.<expiry>` under a secret both share.
//
//   auto token = mint_member_token("alice", unix_now + 300, secret);   // on the backend
//   auto check = check_member_token(token, secret, std::chrono::system_clock::now());
//   if (check.verdict == TokenVerdict::ok) attach(check.member);
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace natsfleet::relay {

// A secret shorter than this is refused where it is configured: HMAC-SHA256's strength is the
// secret's, and `openssl rand -hex 32` gives 64.
inline constexpr std::size_t kMinTokenSecretBytes = 32;

enum class TokenVerdict {
  ok,
  malformed,      // not member.expiry.signature, an invalid member id, or no hex signature
  bad_signature,  // signed with another secret, or altered
  expired,        // well signed, but its expiry has passed
};

struct TokenCheck {
  TokenVerdict verdict = TokenVerdict::malformed;
  std::string member;  // set when ok
};

// Checks the signature in constant time (for a given token length) before anything else is
// trusted; an expired token is reported only when its signature is good.
[[nodiscard]] TokenCheck check_member_token(std::string_view token, std::string_view secret,
                                            std::chrono::system_clock::time_point now);

// The token for `member` valid until `expiry_unix_seconds`; `member` must be a valid member id.
[[nodiscard]] std::string mint_member_token(std::string_view member,
                                            std::int64_t expiry_unix_seconds,
                                            std::string_view secret);

// "missing", "malformed", "bad_signature", "expired" ("ok" for ok): a metrics label.
[[nodiscard]] std::string_view verdict_name(TokenVerdict verdict);

// The secret as kept in its file: trailing line breaks removed (as `$(cat file)` does in a
// shell), nothing else.
[[nodiscard]] std::string trim_secret(std::string text);

}  // namespace natsfleet::relay
