#include "relay/static_files.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <system_error>

#include "relay/member_route.h"

namespace natsfleet::relay {

namespace fs = std::filesystem;

std::optional<fs::path> resolve_static_file(const fs::path& root, std::string_view url_path) {
  const auto decoded = percent_decode(url_path);
  if (!decoded || decoded->empty() || decoded->front() != '/') return std::nullopt;
  if (decoded->find('\0') != std::string::npos || decoded->find('\\') != std::string::npos) {
    return std::nullopt;
  }

  fs::path relative;
  std::string_view rest = std::string_view(*decoded).substr(1);
  while (!rest.empty()) {
    const auto slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (segment.empty()) {
      if (rest.empty()) break;  // a trailing slash names a directory
      return std::nullopt;      // "//" is not a path anyone links to
    }
    if (segment == "." || segment == "..") return std::nullopt;
    relative /= fs::path(std::string(segment));
  }

  std::error_code ec;
  fs::path candidate = root / relative;
  if (fs::is_directory(candidate, ec)) candidate /= "index.html";
  const fs::path real = fs::canonical(candidate, ec);
  if (ec || !fs::is_regular_file(real, ec)) return std::nullopt;
  // Symlinks are followed only while they stay inside the root.
  const auto [root_end, real_it] =
      std::mismatch(root.begin(), root.end(), real.begin(), real.end());
  if (root_end != root.end()) return std::nullopt;
  return real;
}

std::string_view content_type_for(const fs::path& file) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".html" || ext == ".htm") return "text/html; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  if (ext == ".json") return "application/json";
  if (ext == ".ico") return "image/x-icon";
  if (ext == ".txt") return "text/plain; charset=utf-8";
  if (ext == ".webp") return "image/webp";
  if (ext == ".woff2") return "font/woff2";
  return "application/octet-stream";
}

}  // namespace natsfleet::relay
