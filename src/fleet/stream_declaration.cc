#include "fleet/stream_declaration.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "base/duration.h"
#include "fleet/consumer_shape.h"

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

nats::StorageType storage_of(StreamStorage storage) {
  return storage == StreamStorage::memory ? nats::StorageType::memory : nats::StorageType::file;
}

nats::RetentionPolicy retention_of(StreamRetention retention) {
  switch (retention) {
    case StreamRetention::interest:
      return nats::RetentionPolicy::interest;
    case StreamRetention::work_queue:
      return nats::RetentionPolicy::work_queue;
    case StreamRetention::limits:
      break;
  }
  return nats::RetentionPolicy::limits;
}

std::string words(nats::StorageType storage) {
  return storage == nats::StorageType::memory ? "memory" : "file";
}

std::string words(nats::RetentionPolicy retention) {
  switch (retention) {
    case nats::RetentionPolicy::interest:
      return "interest";
    case nats::RetentionPolicy::work_queue:
      return "work-queue";
    case nats::RetentionPolicy::limits:
      break;
  }
  return "limits";
}

std::string words(nanoseconds age) {
  if (age.count() == 0) return "none";
  return base::format_duration(std::chrono::duration_cast<milliseconds>(age));
}

std::string limit_words(int64_t limit) { return limit <= 0 ? "none" : std::to_string(limit); }

// The broker's reading of an unset value, so that "unset" and the broker's default compare equal.
nats::StreamConfig as_broker_reads(nats::StreamConfig c) {
  if (c.num_replicas <= 0) c.num_replicas = 1;
  if (c.duplicate_window.count() == 0) c.duplicate_window = std::chrono::minutes(2);
  if (c.max_bytes <= 0) c.max_bytes = -1;
  if (c.max_msgs <= 0) c.max_msgs = -1;
  std::sort(c.subjects.begin(), c.subjects.end());
  return c;
}

// The declaration as the broker is asked for it; its subjects as written (maybe none).
nats::StreamConfig config_of(const StreamSpec& declared) {
  return {.name = declared.name,
          .subjects = declared.subjects,
          .storage = storage_of(declared.storage),
          .retention = retention_of(declared.retention),
          .max_age = declared.max_age,
          .duplicate_window = declared.duplicate_window,
          .num_replicas = declared.replicas,
          .max_bytes = declared.max_bytes,
          .max_msgs = declared.max_msgs};
}

}  // namespace

nats::StreamConfig declared_stream_config(const WorkSpec& spec) {
  nats::StreamConfig config = config_of(*spec.declared_stream);
  if (config.subjects.empty()) config.subjects = filter_subjects(spec);
  return config;
}

std::vector<std::string> stream_differences(const StreamSpec& declared,
                                            const nats::StreamConfig& actual) {
  const nats::StreamConfig want = as_broker_reads(config_of(declared));
  const nats::StreamConfig have = as_broker_reads(actual);
  std::vector<std::string> out;
  auto differ = [&](const char* field, const std::string& declared_words,
                    const std::string& actual_words) {
    if (declared_words != actual_words)
      out.push_back(
          fmt::format("{}: {} declared, {} on the broker", field, declared_words, actual_words));
  };
  if (!want.subjects.empty())
    differ("subjects", fmt::format("{}", fmt::join(want.subjects, ", ")),
           fmt::format("{}", fmt::join(have.subjects, ", ")));
  differ("storage", words(want.storage), words(have.storage));
  differ("retention", words(want.retention), words(have.retention));
  differ("replicas", std::to_string(want.num_replicas), std::to_string(have.num_replicas));
  differ("max_age", words(want.max_age), words(have.max_age));
  differ("max_bytes", limit_words(want.max_bytes), limit_words(have.max_bytes));
  differ("max_msgs", limit_words(want.max_msgs), limit_words(have.max_msgs));
  differ("duplicate_window", words(want.duplicate_window), words(have.duplicate_window));
  return out;
}

}  // namespace natsfleet::fleet
