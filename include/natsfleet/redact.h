// Secrets out of everything natsfleet prints (logs, /status, audit, lint, dead-letter listings):
// the password or token in a URL's userinfo and the values of its query and fragment.
//
//   std::cout << natsfleet::redact_url("nats://alice:pw@h:4222");  // nats://alice:***@h:4222
//   std::cout << natsfleet::redact_url("https://h/hook?token=abc&x=1");  // ...?token=***&x=***
//   std::cout << natsfleet::redact("cannot reach nats://tok@h:4222: refused");
//   // cannot reach nats://***@h:4222: refused
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "natsfleet/export.h"

namespace natsfleet {

inline constexpr std::string_view kRedacted = "***";

// The functions below read only their arguments: any thread, at any time.

// A URL with its secrets replaced by "***": a userinfo's password (or the whole userinfo when it
// has no ':', a token), and each query and fragment value. Scheme, host, port and path stay, so
// the URL still says where. Text without "://" is returned unchanged.
NATSFLEET_API std::string redact_url(std::string_view url);
NATSFLEET_API std::string redact_urls(const std::vector<std::string>& urls);  // ", "-joined

// Every URL in free text (an error from a library, a log line) redacted as above. A URL runs
// from its scheme to the first whitespace, quote, '<' or '>', less any ':', ',', ';', '.', ')' or
// ']' it ends with.
NATSFLEET_API std::string redact(std::string_view text);

}  // namespace natsfleet
