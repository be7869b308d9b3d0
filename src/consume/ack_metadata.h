// Delivery facts carried by a JetStream reply subject, and the bodies of the acks sent back to it.
//
//   $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<time>.<pending>          (9 tokens)
//   $JS.ACK.<domain>.<acchash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<time>.<pending>.<rnd>
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "natsfleet/message.h"

namespace natsfleet::consume {

std::optional<Delivery> parse_ack_subject(std::string_view reply);

inline constexpr std::string_view kAckBody = "+ACK";
inline constexpr std::string_view kInProgressBody = "+WPI";
inline constexpr std::string_view kTermBody = "+TERM";
// "-NAK", or "-NAK {"delay": <ns>}" to ask the broker to wait before redelivering.
std::string nak_body(std::chrono::milliseconds delay);

}  // namespace natsfleet::consume
