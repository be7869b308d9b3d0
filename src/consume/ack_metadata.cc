#include "consume/ack_metadata.h"

#include <charconv>

namespace natsfleet::consume {
namespace {

template <typename T>
bool parse_number(std::string_view token, T& out) {
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), out);
  return ec == std::errc() && ptr == token.data() + token.size();
}

}  // namespace

std::optional<Delivery> parse_ack_subject(std::string_view reply) {
  // $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending> (9 tokens), or the v2
  // form with domain and account hash after "ACK" and a random token at the end (11 or more).
  constexpr size_t kMaxTokens = 16;
  std::string_view tokens[kMaxTokens];
  size_t count = 0;
  size_t start = 0;
  for (;;) {
    if (count == kMaxTokens) return std::nullopt;
    const size_t dot = reply.find('.', start);
    tokens[count++] = reply.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (count < 9 || tokens[0] != "$JS" || tokens[1] != "ACK") return std::nullopt;
  size_t base = 2;
  if (count >= 11)
    base = 4;
  else if (count != 9)
    return std::nullopt;

  Delivery d;
  if (!parse_number(tokens[base + 2], d.delivered) ||
      !parse_number(tokens[base + 3], d.stream_seq) ||
      !parse_number(tokens[base + 4], d.consumer_seq) ||
      !parse_number(tokens[base + 5], d.timestamp_ns) || !parse_number(tokens[base + 6], d.pending))
    return std::nullopt;
  d.stream = std::string(tokens[base]);
  d.consumer = std::string(tokens[base + 1]);
  return d;
}

std::string nak_body(std::chrono::milliseconds delay) {
  if (delay.count() <= 0) return "-NAK";
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(delay).count();
  return "-NAK {\"delay\": " + std::to_string(ns) + "}";
}

}  // namespace natsfleet::consume
