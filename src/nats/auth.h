// What a connection proves itself with besides a .creds file and a TLS client certificate: a
// user and a password read from a file, a token read from a file, or a user NKey whose seed is
// in a file. Secrets stay in memory only; no error message carries one.
//
//   auto key = nkey_public_key(seed);        // "UD..." from "SU..."
//   auto password = read_secret_file(path);  // the file's text, surrounding whitespace dropped
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "natsfleet/error.h"

namespace natsfleet::nats {

// A user NKey's public key ("U...", 56 characters), derived from its seed ("SU...", 58, as NATS
// tools write it). Errors say what is wrong with the seed, never its text.
Result<std::string> nkey_public_key(std::string_view seed);
// The seed text of a user NKey made from 32 random bytes.
std::string nkey_user_seed(const std::array<uint8_t, 32>& raw);

// The text of a file holding a secret, without surrounding whitespace. Errors name the file and
// `what` it was to hold; an empty file is one.
Result<std::string> read_secret_file(const std::string& path, std::string_view what);

}  // namespace natsfleet::nats
