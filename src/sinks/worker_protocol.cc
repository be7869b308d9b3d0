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

// The answer's "delay" (seconds as a number, or a duration string); nullopt: unreadable.
std::optional<std::chrono::milliseconds> read_delay(const nlohmann::json& d) {
  std::optional<std::chrono::milliseconds> parsed;
  if (d.is_string()) {
    parsed = base::parse_duration(d.get<std::string>());
  } else if (d.is_number() && d.get<double>() >= 0 && d.get<double>() < 365.0 * 24 * 3600) {
    parsed = std::chrono::milliseconds(std::llround(d.get<double>() * 1000));
  }
  if (parsed && *parsed > kMaxWorkerDelay) parsed.reset();
  return parsed;
}

// The answer's "publish" entries, each with a subject and optional string data; the reason
// when one is unreadable.
Result<std::vector<Publish>> read_publishes(const nlohmann::json& p) {
  if (!p.is_array())
    return Result<std::vector<Publish>>(Errc::protocol, "\"publish\" is not an array");
  std::vector<Publish> out;
  for (const auto& entry : p) {
    const auto subject = entry.is_object() ? entry.find("subject") : entry.end();
    if (!entry.is_object() || subject == entry.end() || !subject->is_string() ||
        subject->get<std::string>().empty())
      return Result<std::vector<Publish>>(Errc::protocol, "a publish entry has no subject");
    Publish publish{subject->get<std::string>(), {}, {}};
    if (auto data = entry.find("data"); data != entry.end() && !data->is_null()) {
      if (!data->is_string())
        return Result<std::vector<Publish>>(Errc::protocol,
                                            "a publish entry's data is not a string");
      publish.data = data->get<std::string>();
    }
    out.push_back(std::move(publish));
  }
  return out;
}

// The verdict the answer's "result" names, with the worker's "error" as its reason.
void read_verdict(const nlohmann::json& j, std::chrono::milliseconds delay, SinkResult& out) {
  std::string worker_error;
  if (auto e = j.find("error"); e != j.end() && e->is_string())
    worker_error = e->get<std::string>();
  const auto reason = [&](const char* kind) {
    return worker_error.empty() ? std::string("worker: ") + kind : "worker: " + worker_error;
  };
  const auto result = j.find("result");
  const std::string kind =
      result != j.end() && result->is_string() ? result->get<std::string>() : std::string();
  if (kind == "ack") {
    out.disposition = Disposition::ack();
  } else if (kind == "nak") {
    out.disposition = Disposition::nak(delay);
    out.error = reason("nak");
  } else if (kind == "term") {
    out.disposition = Disposition::term();
    out.error = reason("term");
  } else if (kind == "retry") {
    // The worker's own downstream is unavailable: hold the message, use no delivery.
    out.disposition = Disposition::retry(delay);
    out.error = reason("retry");
  } else {
    out.disposition = Disposition::nak(kWorkerRetryDelay);
    out.error = "worker answer: unknown result " + (result == j.end() ? "(none)" : result->dump());
  }
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
  std::chrono::milliseconds delay{0};
  if (auto d = j.find("delay"); d != j.end() && !d->is_null()) {
    const auto parsed = read_delay(*d);
    if (!parsed) {
      answer.result = bad_answer("unreadable delay " + d->dump());
      return answer;
    }
    delay = *parsed;
  }
  if (auto p = j.find("publish"); p != j.end() && !p->is_null()) {
    auto publishes = read_publishes(*p);
    if (!publishes) {
      answer.result = bad_answer(publishes.error().message);
      return answer;
    }
    answer.result.publish = std::move(publishes.value());
  }
  read_verdict(j, delay, answer.result);
  return answer;
}

std::string publish_msg_id(const Message& message, const std::string& subscription, size_t index) {
  if (const auto& d = message.delivery())
    return fmt::format("{}/{}:{}:{}", subscription, d->stream, d->stream_seq, index);
  return fmt::format("{}/{}:{:016x}:{}", subscription, message.subject(),
                     base::fnv1a_64(message.data()), index);
}

}  // namespace natsfleet::sinks
