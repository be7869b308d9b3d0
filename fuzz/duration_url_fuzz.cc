// The config's duration and URL readers, and the redaction every printed URL goes through.
// Checks, beyond not crashing: a duration read is formatted back to itself; a redacted URL still
// parses to the same host and port, and its userinfo keeps no password or token.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/duration.h"
#include "base/endpoint.h"
#include "natsfleet/redact.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace config = natsfleet::config;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto d = base::parse_duration(text)) {
    if (!base::looks_like_duration(text)) __builtin_trap();
    if (*d > base::kMaxDuration || d->count() < 0) __builtin_trap();
    if (base::parse_duration(base::format_duration(*d)) != *d) __builtin_trap();
  }

  const std::string redacted = natsfleet::redact(text);
  (void)natsfleet::redact_url(text);
  if (auto url = base::parse_url(text)) {
    (void)base::is_loopback_host(url->host);
    const auto after = base::parse_url(natsfleet::redact_url(text));
    if (!after || after->host != url->host || after->port != url->port) __builtin_trap();
    if (!url->userinfo.empty()) {
      const std::string& info = after->userinfo;
      const bool hidden = info == "***" || (info.size() >= 4 && info.ends_with(":***") &&
                                            info.find(':') == info.size() - 4);
      if (!hidden) __builtin_trap();
    }
  }
  return 0;
}
