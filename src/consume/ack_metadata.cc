#include "consume/ack_metadata.h"

#include <charconv>
#include <vector>

namespace natsfleet::consume {
namespace {

template <typename T>
bool parse_number(std::string_view token, T& out) {
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), out);
  return ec == std::errc() && ptr == token.data() + token.size();
}

}  // namespace

std::optional<Delivery> parse_ack_subject(std::string_view reply) {
  std::vector<std::string_view> tokens;
  size_t start = 0;
  while (start <= reply.size()) {
    size_t dot = reply.find('.', start);
    if (dot == std::string_view::npos) dot = reply.size();
    tokens.push_back(reply.substr(start, dot - start));
    start = dot + 1;
  }
  if (tokens.size() < 9 || tokens[0] != "$JS" || tokens[1] != "ACK") return std::nullopt;
  // The v2 form inserts domain and account hash after "ACK" and appends a random token.
  size_t base = 2;
  if (tokens.size() >= 11)
    base = 4;
  else if (tokens.size() != 9)
    return std::nullopt;

  Delivery d;
  d.stream = std::string(tokens[base]);
  d.consumer = std::string(tokens[base + 1]);
  if (!parse_number(tokens[base + 2], d.delivered) ||
      !parse_number(tokens[base + 3], d.stream_seq) ||
      !parse_number(tokens[base + 4], d.consumer_seq) ||
      !parse_number(tokens[base + 5], d.timestamp_ns) || !parse_number(tokens[base + 6], d.pending))
    return std::nullopt;
  return d;
}

std::string nak_body(std::chrono::milliseconds delay) {
  if (delay.count() <= 0) return "-NAK";
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(delay).count();
  return "-NAK {\"delay\": " + std::to_string(ns) + "}";
}

}  // namespace natsfleet::consume
