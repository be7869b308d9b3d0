// How a WebSocket request names the member whose statuses it wants: GET /ws?member=<id>. The id is
// used to route statuses and for nothing else, so it is held to a small safe alphabet.
//
//   auto member = member_from_query("member=alice%40example");  // "alice@example"
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "natsfleet/error.h"

namespace natsfleet::relay {

inline constexpr std::size_t kMaxMemberIdLength = 64;

// 1 to 64 characters of A-Z a-z 0-9 _ : @ -  (no dot: an id is one token of the relay's subject)
[[nodiscard]] bool valid_member_id(std::string_view id);

// Decodes %XX escapes; '+' stays '+'. Nothing when an escape is malformed.
[[nodiscard]] std::optional<std::string> percent_decode(std::string_view text);

// The decoded value of parameter `name` in a query string (the part after '?'); nothing when it
// is absent. Fails (invalid_argument, naming the parameter) when it is given twice or badly
// escaped.
[[nodiscard]] Result<std::optional<std::string>> query_parameter(std::string_view query,
                                                                 std::string_view name);

// The decoded, validated `member` parameter of a query string (the part after '?'). Other
// parameters are ignored. Fails (invalid_argument, with a message fit for the client) when the
// parameter is missing, given twice, badly escaped or not a valid id.
[[nodiscard]] Result<std::string> member_from_query(std::string_view query);

}  // namespace natsfleet::relay
