#include "sinks/worker_protocol.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "fmt/format.h"

namespace natsfleet::sinks {
namespace {

SinkResult bad_answer(std::string why) {
  return SinkResult{Disposition::nak(kWorkerRetryDelay), {}, "worker answer: " + std::move(why)};
}

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  double total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    const size_t number_start = i;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    if (i == number_start) return std::nullopt;
    double number = 0;
    try {
      size_t used = 0;
      const std::string digits(text.substr(number_start, i - number_start));
      number = std::stod(digits, &used);
      if (used != digits.size()) return std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    const size_t unit_start = i;
    while (i < text.size() && ((text[i] >= 'a' && text[i] <= 'z') || text[i] == 'u')) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit == "ns") {
      scale = 1e-6;
    } else if (unit == "us") {
      scale = 1e-3;
    } else if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m") {
      scale = 60'000;
    } else if (unit == "h") {
      scale = 3'600'000;
    } else {
      return std::nullopt;
    }
    total_ms += number * scale;
  }
  // A year is far beyond any sensible redelivery delay; refusing it keeps the cast defined.
  if (!std::isfinite(total_ms) || total_ms > 365.0 * 24 * 3'600'000) return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total_ms)));
}

std::optional<WorkerAnswer> parse_worker_answer(std::string_view line, std::string& why) {
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    why = "not a JSON object";
    return std::nullopt;
  }
  const auto id = j.find("id");
  if (id == j.end() || !id->is_number_unsigned()) {
    why = "no numeric \"id\"";
    return std::nullopt;
  }
  WorkerAnswer answer;
  answer.id = id->get<uint64_t>();

  std::string worker_error;
  if (auto e = j.find("error"); e != j.end() && e->is_string())
    worker_error = e->get<std::string>();

  std::chrono::milliseconds delay{0};
  if (auto d = j.find("delay"); d != j.end() && !d->is_null()) {
    std::optional<std::chrono::milliseconds> parsed;
    if (d->is_string()) {
      parsed = parse_duration(d->get<std::string>());
    } else if (d->is_number() && d->get<double>() >= 0 && d->get<double>() < 365.0 * 24 * 3600) {
      parsed = std::chrono::milliseconds(std::llround(d->get<double>() * 1000));
    }
    if (!parsed) {
      answer.result = bad_answer("unreadable delay " + d->dump());
      return answer;
    }
    delay = *parsed;
  }

  if (auto p = j.find("publish"); p != j.end() && !p->is_null()) {
    if (!p->is_array()) {
      answer.result = bad_answer("\"publish\" is not an array");
      return answer;
    }
    for (const auto& entry : *p) {
      const auto subject = entry.is_object() ? entry.find("subject") : entry.end();
      if (!entry.is_object() || subject == entry.end() || !subject->is_string() ||
          subject->get<std::string>().empty()) {
        answer.result = bad_answer("a publish entry has no subject");
        return answer;
      }
      Publish publish{subject->get<std::string>(), {}, {}};
      if (auto data = entry.find("data"); data != entry.end() && !data->is_null()) {
        if (!data->is_string()) {
          answer.result = bad_answer("a publish entry's data is not a string");
          return answer;
        }
        publish.data = data->get<std::string>();
      }
      answer.result.publish.push_back(std::move(publish));
    }
  }

  const auto result = j.find("result");
  const std::string kind =
      result != j.end() && result->is_string() ? result->get<std::string>() : std::string();
  if (kind == "ack") {
    answer.result.disposition = Disposition::ack();
  } else if (kind == "nak") {
    answer.result.disposition = Disposition::nak(delay);
    answer.result.error = worker_error.empty() ? "worker: nak" : "worker: " + worker_error;
  } else if (kind == "term") {
    answer.result.disposition = Disposition::term();
    answer.result.error = worker_error.empty() ? "worker: term" : "worker: " + worker_error;
  } else if (kind == "retry") {
    // The worker's own downstream is unavailable: hold the message, use no delivery.
    answer.result.disposition = Disposition::retry(delay);
    answer.result.error = worker_error.empty() ? "worker: retry" : "worker: " + worker_error;
  } else {
    answer.result.disposition = Disposition::nak(kWorkerRetryDelay);
    answer.result.error =
        "worker answer: unknown result " + (result == j.end() ? "(none)" : result->dump());
  }
  return answer;
}

std::string publish_msg_id(const Message& message, const std::string& subscription, size_t index) {
  if (const auto& d = message.delivery())
    return fmt::format("{}/{}:{}:{}", subscription, d->stream, d->stream_seq, index);
  return fmt::format("{}/{}:{:016x}:{}", subscription, message.subject(), fnv1a64(message.data()),
                     index);
}

}  // namespace natsfleet::sinks
