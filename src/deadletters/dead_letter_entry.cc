#include "deadletters/dead_letter_entry.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "natsfleet/dead_letter.h"

namespace natsfleet::deadletters {
namespace {

std::string first(const Headers& headers, const char* key) {
  auto it = headers.find(key);
  return it == headers.end() || it->second.empty() ? std::string() : it->second.front();
}

// Header names are compared without regard to case, as HTTP-style headers are.
bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

bool equals_nocase(std::string_view text, std::string_view other) {
  return text.size() == other.size() && starts_with_nocase(text, other);
}

}  // namespace

DeadLetterEntry describe_entry(nats::StoredMessage message, const std::string& stream) {
  DeadLetterEntry e;
  e.stream = stream;
  e.seq = message.seq;
  e.subject = std::move(message.subject);
  e.stored_at = std::move(message.time);
  const Headers& h = message.headers;
  e.dead_lettered_at = first(h, dead_letter::kTime);
  e.subscription = first(h, dead_letter::kSubscription);
  e.origin_subject = first(h, dead_letter::kSubject);
  e.origin_stream = first(h, dead_letter::kStream);
  e.origin_seq = first(h, dead_letter::kSequence);
  e.deliveries = first(h, dead_letter::kDeliveries);
  e.reason = first(h, dead_letter::kReason);
  e.data = std::move(message.data);
  e.headers = std::move(message.headers);
  return e;
}

std::string replay_msg_id(const std::string& stream, uint64_t seq) {
  return "natsfleet-replay:" + stream + ":" + std::to_string(seq);
}

Headers replay_headers(const DeadLetterEntry& entry) {
  Headers out;
  for (const auto& [key, values] : entry.headers) {
    if (starts_with_nocase(key, "Natsfleet-") || equals_nocase(key, "Nats-Msg-Id") ||
        starts_with_nocase(key, "Nats-Expected-"))
      continue;
    out[key] = values;
  }
  out["Nats-Msg-Id"] = {replay_msg_id(entry.stream, entry.seq)};
  return out;
}

}  // namespace natsfleet::deadletters
