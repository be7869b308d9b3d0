#include "consume/pull_status.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace natsfleet::consume {
namespace {

uint64_t header_number(const Headers& headers, const char* key) {
  auto it = headers.find(key);
  if (it == headers.end() || it->second.empty()) return 0;
  uint64_t value = 0;
  const std::string& s = it->second.front();
  std::from_chars(s.data(), s.data() + s.size(), value);
  return value;
}

bool contains_ci(std::string haystack, std::string needle) {
  auto lower = [](std::string& s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  };
  lower(haystack);
  lower(needle);
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

PullStatus classify_pull_status(int status, const std::string& description,
                                const Headers& headers) {
  PullStatus out;
  out.description = description;
  out.pending_messages = header_number(headers, "Nats-Pending-Messages");
  out.pending_bytes = header_number(headers, "Nats-Pending-Bytes");
  switch (status) {
    case 100:
      out.signal = PullSignal::heartbeat;
      break;
    case 404:
      out.signal = PullSignal::no_messages;
      break;
    case 408:
      out.signal = PullSignal::request_expired;
      break;
    case 400:
      out.signal = PullSignal::bad_request;
      break;
    case 503:
      out.signal = PullSignal::no_responders;
      break;
    case 409:
      if (contains_ci(description, "consumer deleted"))
        out.signal = PullSignal::consumer_deleted;
      else if (contains_ci(description, "leadership change"))
        out.signal = PullSignal::leadership_change;
      else if (contains_ci(description, "maxwaiting"))
        out.signal = PullSignal::max_waiting;
      else if (contains_ci(description, "push based"))
        out.signal = PullSignal::push_consumer;
      else
        out.signal = PullSignal::request_done;
      break;
    default:
      out.signal = PullSignal::other;
      break;
  }
  return out;
}

const char* to_string(PullSignal signal) noexcept {
  switch (signal) {
    case PullSignal::heartbeat:
      return "heartbeat";
    case PullSignal::no_messages:
      return "no messages";
    case PullSignal::request_expired:
      return "request expired";
    case PullSignal::consumer_deleted:
      return "consumer deleted";
    case PullSignal::leadership_change:
      return "leadership change";
    case PullSignal::max_waiting:
      return "exceeded max waiting";
    case PullSignal::request_done:
      return "request done";
    case PullSignal::push_consumer:
      return "consumer is push based";
    case PullSignal::bad_request:
      return "bad request";
    case PullSignal::no_responders:
      return "no responders";
    case PullSignal::other:
      return "other status";
  }
  return "?";
}

}  // namespace natsfleet::consume
