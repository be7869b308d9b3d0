#include "audit/broker_snapshot.h"

#include <algorithm>

#include "base/subject_match.h"

namespace natsfleet::audit {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Each call may wait for whatever is left of the audit's time; once none is left, calls time out
// at once (a non-positive timeout would mean "wait for ever" to nats.c).
milliseconds time_left(steady_clock::time_point deadline) {
  return std::max(std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now()),
                  milliseconds(1));
}

}  // namespace

const nats::ConsumerInfo* BrokerSnapshot::find(const std::string& stream,
                                               const std::string& consumer) const {
  for (const auto& c : consumers)
    if (c.stream == stream && c.name == consumer) return &c;
  return nullptr;
}

std::vector<const nats::ConsumerInfo*> BrokerSnapshot::consumers_of(
    const std::string& stream) const {
  std::vector<const nats::ConsumerInfo*> out;
  for (const auto& c : consumers)
    if (c.stream == stream) out.push_back(&c);
  return out;
}

Result<BrokerSnapshot> read_snapshot(nats::Connection& connection,
                                     steady_clock::time_point deadline,
                                     const std::vector<std::string>& count_subjects) {
  auto api = [&] { return nats::JetStreamApi(connection, time_left(deadline)); };
  BrokerSnapshot snapshot;
  auto stream_names = api().stream_names();
  if (!stream_names) return stream_names.error();
  std::sort(stream_names->begin(), stream_names->end());
  for (const auto& stream : *stream_names) {
    auto info = api().stream_info(stream);
    if (!info && info.error().is_stream_not_found()) continue;
    if (!info) return info.error();
    snapshot.streams.push_back(std::move(info.value()));

    auto consumer_names = api().consumer_names(stream);
    if (!consumer_names && consumer_names.error().is_stream_not_found()) continue;
    if (!consumer_names) return consumer_names.error();
    std::sort(consumer_names->begin(), consumer_names->end());
    for (const auto& consumer : *consumer_names) {
      auto consumer_info = api().consumer_info(stream, consumer);
      if (!consumer_info && (consumer_info.error().is_consumer_not_found() ||
                             consumer_info.error().is_stream_not_found()))
        continue;
      if (!consumer_info) return consumer_info.error();
      snapshot.consumers.push_back(std::move(consumer_info.value()));
    }
  }
  for (const auto& subject : count_subjects) {
    for (const auto& stream : snapshot.streams) {
      if (!base::subject_within_any(subject, stream.subjects)) continue;
      auto count = api().subject_messages(stream.name, subject);
      if (!count && count.error().is_stream_not_found()) break;
      if (!count) return count.error();
      snapshot.subject_messages[subject] = *count;
      break;
    }
  }
  return snapshot;
}

}  // namespace natsfleet::audit
