// FNV-1a hashes: short, stable fingerprints of text that are the same across builds, platforms
// and processes (std::hash is not), for names and ids that replicas must compute alike.
//
//   const uint32_t tag = base::fnv1a_32(stream + '\n' + subject);
#pragma once

#include <cstdint>
#include <string_view>

namespace natsfleet::base {

constexpr std::uint32_t fnv1a_32(std::string_view bytes) {
  std::uint32_t h = 2166136261u;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

constexpr std::uint64_t fnv1a_64(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace natsfleet::base
