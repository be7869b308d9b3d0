// Maps a request path to a file under the gateway's web root, refusing anything that could leave
// it, and names the file's content type.
//
//   auto file = resolve_static_file(canonical_root, "/app.js");   // root/app.js, if it exists
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

namespace natsfleet::relay {

// The regular file that `url_path` (still percent-encoded, without the query) names under `root`,
// which must be canonical (std::filesystem::canonical). "/" and directories mean their
// index.html. Nothing for a missing file, a malformed path, any "." or ".." segment, a backslash or
// NUL, or a file whose real location (after symlinks) is outside `root`.
[[nodiscard]] std::optional<std::filesystem::path> resolve_static_file(
    const std::filesystem::path& root, std::string_view url_path);

// By extension: html, js, mjs, css, svg, png, json, ico, txt, webp, woff2; else octet-stream.
[[nodiscard]] std::string_view content_type_for(const std::filesystem::path& file);

}  // namespace natsfleet::relay
