// Checks on names and subjects, shared by the library (start-up) and the daemon's config.
// Each returns an empty string when the value is fine, else what is wrong with it.
#pragma once

#include <string>
#include <string_view>

#include "natsfleet/spec.h"

namespace natsfleet {

// A NATS subject: dot-separated non-empty tokens, no whitespace; `*` a whole token and `>` the
// last token, when wildcards are allowed.
std::string check_subject(std::string_view subject, bool allow_wildcards = true);
// A consumer or stream name: non-empty, no whitespace, '.', '*', '>', '/' or '\'.
std::string check_name(std::string_view name);
std::string validate_work(const WorkSpec& spec);
// The `token`-th (1-based) dot-separated token of a subject, or "" when it has fewer.
std::string subject_token(std::string_view subject, int token);
std::string validate_broadcast(const BroadcastSpec& spec);

}  // namespace natsfleet
