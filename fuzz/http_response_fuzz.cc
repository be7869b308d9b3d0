// What the http sink reads from an endpoint: the response as Beast parses it with the sink's
// limits, then what natsfleet does with it itself (status class, Retry-After), and the sink URL
// parser. The first byte picks the delivery count the retry delay is computed for.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sinks/http_sink.h"

namespace http = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint64_t delivered = data[0];
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);

  http::response_parser<http::string_body> parser;
  parser.body_limit(std::uint64_t{1} << 20);  // the sink's kMaxResponseBody
  boost::beast::error_code ec;
  std::string_view rest = bytes;
  while (!rest.empty() && !parser.is_done()) {
    const size_t used = parser.put(boost::asio::buffer(rest.data(), rest.size()), ec);
    if (ec == http::error::need_more) break;
    if (ec) break;
    if (used == 0) break;
    rest.remove_prefix(used);
  }
  if (parser.is_header_done()) {
    const auto& response = parser.get();
    (void)response.result_int();
    (void)response.keep_alive();
    const auto retry_after = response[http::field::retry_after];
    const auto delay = natsfleet::sinks::http_retry_delay(
        std::string_view(retry_after.data(), retry_after.size()), delivered);
    if (delay.count() < 0) __builtin_trap();
  }
  (void)natsfleet::sinks::http_retry_delay(bytes, delivered);
  (void)natsfleet::sinks::parse_http_url(bytes);
  return 0;
}
