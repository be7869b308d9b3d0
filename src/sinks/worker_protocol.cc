#include "sinks/worker_protocol.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "base/duration.h"
#include "base/fnv_hash.h"
#include "fmt/format.h"

namespace natsfleet::sinks {
namespace {

SinkResult bad_answer(std::string why) {
  return SinkResult{Disposition::nak(kWorkerRetryDelay), {}, "worker answer: " + std::move(why)};
}

}  // namespace

Result<WorkerAnswer> parse_worker_answer(std::string_view line) {
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Result<WorkerAnswer>(Errc::protocol, "not a JSON object");
  }
  const auto id = j.find("id");
  if (id == j.end() || !id->is_number_unsigned()) {
    return Result<WorkerAnswer>(Errc::protocol, "no numeric \"id\"");
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
      parsed = base::parse_duration(d->get<std::string>());
    } else if (d->is_number() && d->get<double>() >= 0 && d->get<double>() < 365.0 * 24 * 3600) {
      parsed = std::chrono::milliseconds(std::llround(d->get<double>() * 1000));
    }
    if (parsed && *parsed > kMaxWorkerDelay) parsed.reset();
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
  return fmt::format("{}/{}:{:016x}:{}", subscription, message.subject(),
                     base::fnv1a_64(message.data()), index);
}

}  // namespace natsfleet::sinks
