// What the WebSocket gateway (src/relay) reads from a browser before a socket is upgraded: the
// HTTP request as Beast parses it with the gateway's limits (8 KiB of header, 8 KiB of body),
// then what natsfleet does with it itself: split the target, read ?member=, check the upgrade,
// resolve a static file under a web root.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "relay/member_route.h"
#include "relay/static_files.h"

namespace http = boost::beast::http;

namespace {

// A small web root: the resolver must never leave it, whatever the path says.
const std::filesystem::path& web_root() {
  static const std::filesystem::path root = [] {
    auto dir = std::filesystem::temp_directory_path() / "natsfleet-fuzz-web";
    std::filesystem::create_directories(dir / "sub");
    std::ofstream(dir / "index.html") << "<p>index</p>";
    std::ofstream(dir / "sub" / "app.js") << "1";
    return std::filesystem::canonical(dir);
  }();
  return root;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto& root = web_root();

  http::request_parser<http::string_body> parser;
  parser.header_limit(8 * 1024);
  parser.body_limit(8 * 1024);
  boost::beast::error_code ec;
  std::string_view rest = bytes;
  while (!rest.empty() && !parser.is_done()) {
    const size_t used = parser.put(boost::asio::buffer(rest.data(), rest.size()), ec);
    if (ec || used == 0) break;
    rest.remove_prefix(used);
  }
  if (parser.is_done()) {
    const auto& req = parser.get();
    const std::string_view target(req.target().data(), req.target().size());
    const auto question = target.find('?');
    const std::string_view path = target.substr(0, question);
    if (question != std::string_view::npos)
      (void)natsfleet::relay::member_from_query(target.substr(question + 1));
    (void)boost::beast::websocket::is_upgrade(req);
    if (auto file = natsfleet::relay::resolve_static_file(root, path)) {
      // Inside the root, always.
      const auto relative = file->lexically_relative(root);
      if (relative.empty() || *relative.begin() == "..") __builtin_trap();
      (void)natsfleet::relay::content_type_for(*file);
    }
  }
  // The same functions on raw bytes, as a query string and as a path.
  (void)natsfleet::relay::member_from_query(bytes);
  (void)natsfleet::relay::percent_decode(bytes);
  (void)natsfleet::relay::resolve_static_file(root, bytes);
  return 0;
}
