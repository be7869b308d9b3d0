#include "nats/jetstream_api.h"

#include <algorithm>
#include <array>

#include "base/utc_time.h"
#include "nats/connection.h"

namespace natsfleet::nats {
namespace {

constexpr const char* kApi = "$JS.API.";

template <typename T>
T get_or(const nlohmann::json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

// Trims the blanks NATS allows around a header value (and a stray '\r').
std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

}  // namespace

Result<std::string> decode_base64(std::string_view text) {
  static const std::array<int8_t, 256> kValue = [] {
    std::array<int8_t, 256> v{};
    v.fill(-1);
    const std::string_view alphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < alphabet.size(); ++i)
      v[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
    return v;
  }();
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return Result<std::string>(Errc::protocol, "base64 of a bad length");
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    const int8_t value = kValue[static_cast<unsigned char>(c)];
    if (value < 0) return Result<std::string>(Errc::protocol, "not base64");
    bits = (bits << 6) | static_cast<uint32_t>(value);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xFF));
    }
  }
  return out;
}

Result<Headers> parse_header_block(std::string_view block) {
  constexpr std::string_view kVersion = "NATS/1.0";
  if (block.substr(0, kVersion.size()) != kVersion)
    return Result<Headers>(Errc::protocol, "a header block must start with NATS/1.0");
  Headers headers;
  size_t start = block.find('\n');  // the version line (and any status) is not a header
  while (start != std::string_view::npos && start + 1 < block.size()) {
    ++start;
    const size_t end = block.find('\n', start);
    const std::string_view line =
        trim(block.substr(start, end == std::string_view::npos ? end : end - start));
    start = end;
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0)
      return Result<Headers>(Errc::protocol, "header line without a key: " + std::string(line));
    headers[std::string(trim(line.substr(0, colon)))].emplace_back(trim(line.substr(colon + 1)));
  }
  return headers;
}

Result<StoredMessage> parse_stored_message(const nlohmann::json& message) {
  if (!message.is_object()) return Result<StoredMessage>(Errc::protocol, "no message in answer");
  StoredMessage m;
  m.subject = get_or<std::string>(message, "subject", "");
  m.seq = get_or<uint64_t>(message, "seq", 0);
  m.time = get_or<std::string>(message, "time", "");
  auto data = decode_base64(get_or<std::string>(message, "data", ""));
  if (!data) return Error{data.error().code, "message data: " + data.error().describe()};
  m.data = std::move(*data);
  if (auto hdrs = get_or<std::string>(message, "hdrs", ""); !hdrs.empty()) {
    auto block = decode_base64(hdrs);
    if (!block) return Error{block.error().code, "message headers: " + block.error().describe()};
    auto headers = parse_header_block(*block);
    if (!headers) return headers.error();
    m.headers = std::move(*headers);
  }
  return m;
}

const char* to_string(DeliverPolicy policy) {
  switch (policy) {
    case DeliverPolicy::all:
      return "all";
    case DeliverPolicy::last:
      return "last";
    case DeliverPolicy::new_messages:
      return "new";
    case DeliverPolicy::by_start_sequence:
      return "by_start_sequence";
    case DeliverPolicy::by_start_time:
      return "by_start_time";
    case DeliverPolicy::last_per_subject:
      return "last_per_subject";
  }
  return "all";
}

const char* to_string(AckPolicy policy) {
  switch (policy) {
    case AckPolicy::none:
      return "none";
    case AckPolicy::all:
      return "all";
    case AckPolicy::explicit_ack:
      return "explicit";
  }
  return "explicit";
}

const char* to_string(ReplayPolicy policy) {
  return policy == ReplayPolicy::original ? "original" : "instant";
}

namespace {

template <typename Enum, size_t N>
Enum enum_from(const std::string& text, const std::array<Enum, N>& values, Enum fallback) {
  for (Enum v : values)
    if (text == to_string(v)) return v;
  return fallback;
}

// The keys ConsumerConfig models; every other key rides in other_fields.
constexpr std::array<std::string_view, 19> kConsumerKeys = {
    "durable_name",   "name",         "description",        "deliver_policy",  "opt_start_seq",
    "ack_policy",     "ack_wait",     "max_deliver",        "filter_subject",  "filter_subjects",
    "replay_policy",  "max_waiting",  "max_ack_pending",    "deliver_subject", "deliver_group",
    "idle_heartbeat", "flow_control", "inactive_threshold", "metadata"};

std::chrono::nanoseconds ns_of(const nlohmann::json& j, const char* key) {
  return std::chrono::nanoseconds(get_or<int64_t>(j, key, 0));
}

}  // namespace

ConsumerConfig parse_consumer_config(const nlohmann::json& j) {
  ConsumerConfig c;
  if (!j.is_object()) return c;
  c.durable_name = get_or<std::string>(j, "durable_name", "");
  c.name = get_or<std::string>(j, "name", "");
  c.description = get_or<std::string>(j, "description", "");
  c.deliver_policy =
      enum_from(get_or<std::string>(j, "deliver_policy", "all"),
                std::array{DeliverPolicy::all, DeliverPolicy::last, DeliverPolicy::new_messages,
                           DeliverPolicy::by_start_sequence, DeliverPolicy::by_start_time,
                           DeliverPolicy::last_per_subject},
                DeliverPolicy::all);
  c.opt_start_seq = get_or<uint64_t>(j, "opt_start_seq", 0);
  c.ack_policy = enum_from(get_or<std::string>(j, "ack_policy", "explicit"),
                           std::array{AckPolicy::none, AckPolicy::all, AckPolicy::explicit_ack},
                           AckPolicy::explicit_ack);
  c.ack_wait = ns_of(j, "ack_wait");
  c.max_deliver = get_or<int64_t>(j, "max_deliver", 0);
  c.filter_subject = get_or<std::string>(j, "filter_subject", "");
  c.filter_subjects = get_or<std::vector<std::string>>(j, "filter_subjects", {});
  c.replay_policy =
      enum_from(get_or<std::string>(j, "replay_policy", "instant"),
                std::array{ReplayPolicy::instant, ReplayPolicy::original}, ReplayPolicy::instant);
  c.max_waiting = get_or<int64_t>(j, "max_waiting", 0);
  c.max_ack_pending = get_or<int64_t>(j, "max_ack_pending", 0);
  c.deliver_subject = get_or<std::string>(j, "deliver_subject", "");
  c.deliver_group = get_or<std::string>(j, "deliver_group", "");
  c.idle_heartbeat = ns_of(j, "idle_heartbeat");
  c.flow_control = get_or<bool>(j, "flow_control", false);
  c.inactive_threshold = ns_of(j, "inactive_threshold");
  c.metadata = get_or<std::map<std::string, std::string>>(j, "metadata", {});
  for (const auto& [key, value] : j.items())
    if (std::find(kConsumerKeys.begin(), kConsumerKeys.end(), key) == kConsumerKeys.end())
      c.other_fields[key] = value.dump();
  return c;
}

nlohmann::json to_json(const ConsumerConfig& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, text] : c.other_fields)
    j[key] = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto text = [&](const char* key, const std::string& value) {
    if (!value.empty()) j[key] = value;
  };
  auto number = [&](const char* key, auto value) {
    if (value != 0) j[key] = value;
  };
  auto duration = [&](const char* key, std::chrono::nanoseconds value) {
    if (value.count() != 0) j[key] = value.count();
  };
  text("durable_name", c.durable_name);
  text("name", c.name);
  text("description", c.description);
  j["deliver_policy"] = to_string(c.deliver_policy);
  number("opt_start_seq", c.opt_start_seq);
  j["ack_policy"] = to_string(c.ack_policy);
  duration("ack_wait", c.ack_wait);
  number("max_deliver", c.max_deliver);
  text("filter_subject", c.filter_subject);
  if (!c.filter_subjects.empty()) j["filter_subjects"] = c.filter_subjects;
  j["replay_policy"] = to_string(c.replay_policy);
  number("max_waiting", c.max_waiting);
  number("max_ack_pending", c.max_ack_pending);
  text("deliver_subject", c.deliver_subject);
  text("deliver_group", c.deliver_group);
  duration("idle_heartbeat", c.idle_heartbeat);
  if (c.flow_control) j["flow_control"] = true;
  duration("inactive_threshold", c.inactive_threshold);
  if (!c.metadata.empty()) j["metadata"] = c.metadata;
  return j;
}

nlohmann::json to_json(const StreamConfig& c) {
  nlohmann::json j = {{"name", c.name},
                      {"subjects", c.subjects},
                      {"storage", c.storage == StorageType::memory ? "memory" : "file"},
                      {"retention", c.retention == RetentionPolicy::interest     ? "interest"
                                    : c.retention == RetentionPolicy::work_queue ? "workqueue"
                                                                                 : "limits"}};
  if (c.max_age.count() != 0) j["max_age"] = c.max_age.count();
  if (c.duplicate_window.count() != 0) j["duplicate_window"] = c.duplicate_window.count();
  if (c.num_replicas != 0) j["num_replicas"] = c.num_replicas;
  if (c.max_msgs_per_subject != 0) j["max_msgs_per_subject"] = c.max_msgs_per_subject;
  if (c.max_bytes != 0) j["max_bytes"] = c.max_bytes;
  if (c.max_msgs != 0) j["max_msgs"] = c.max_msgs;
  return j;
}

StreamInfo parse_stream_info(const nlohmann::json& j) {
  StreamInfo info;
  const auto& config = j.value("config", nlohmann::json::object());
  info.name = get_or<std::string>(config, "name", "");
  info.subjects = get_or<std::vector<std::string>>(config, "subjects", {});
  info.num_replicas = std::max(get_or<int>(config, "num_replicas", 1), 1);
  const std::string retention = get_or<std::string>(config, "retention", "limits");
  info.retention = retention == "interest"    ? RetentionPolicy::interest
                   : retention == "workqueue" ? RetentionPolicy::work_queue
                                              : RetentionPolicy::limits;
  info.config = {
      .name = info.name,
      .subjects = info.subjects,
      .storage = get_or<std::string>(config, "storage", "file") == "memory" ? StorageType::memory
                                                                            : StorageType::file,
      .retention = info.retention,
      .max_age = std::chrono::nanoseconds(get_or<int64_t>(config, "max_age", 0)),
      .duplicate_window = std::chrono::nanoseconds(get_or<int64_t>(config, "duplicate_window", 0)),
      .num_replicas = info.num_replicas,
      .max_msgs_per_subject = get_or<int64_t>(config, "max_msgs_per_subject", 0),
      .max_bytes = get_or<int64_t>(config, "max_bytes", 0),
      .max_msgs = get_or<int64_t>(config, "max_msgs", 0)};
  const auto& state = j.value("state", nlohmann::json::object());
  info.messages = get_or<uint64_t>(state, "messages", 0);
  info.first_seq = get_or<uint64_t>(state, "first_seq", 0);
  info.last_seq = get_or<uint64_t>(state, "last_seq", 0);
  if (j.contains("cluster")) info.leader = get_or<std::string>(j["cluster"], "leader", "");
  info.created = get_or<std::string>(j, "created", "");
  return info;
}

ConsumerInfo parse_consumer_info(const nlohmann::json& j) {
  ConsumerInfo info;
  info.stream = get_or<std::string>(j, "stream_name", "");
  info.name = get_or<std::string>(j, "name", "");
  info.config = parse_consumer_config(j.value("config", nlohmann::json::object()));
  info.num_pending = get_or<uint64_t>(j, "num_pending", 0);
  info.num_ack_pending = get_or<uint64_t>(j, "num_ack_pending", 0);
  info.num_redelivered = get_or<uint64_t>(j, "num_redelivered", 0);
  info.num_waiting = get_or<uint64_t>(j, "num_waiting", 0);
  info.push_bound = get_or<bool>(j, "push_bound", false);
  if (auto it = j.find("delivered"); it != j.end() && it->is_object()) {
    info.delivered_stream_seq = get_or<uint64_t>(*it, "stream_seq", 0);
    info.delivered_consumer_seq = get_or<uint64_t>(*it, "consumer_seq", 0);
    info.last_delivery_ns =
        base::parse_rfc3339_nanos(get_or<std::string>(*it, "last_active", "")).value_or(0);
  }
  info.gathered_ns = base::parse_rfc3339_nanos(get_or<std::string>(j, "ts", "")).value_or(0);
  if (auto it = j.find("ack_floor"); it != j.end() && it->is_object())
    info.ack_floor_stream_seq = get_or<uint64_t>(*it, "stream_seq", 0);
  if (auto it = j.find("cluster"); it != j.end() && it->is_object())
    info.leader = get_or<std::string>(*it, "leader", "");
  info.created = get_or<std::string>(j, "created", "");
  return info;
}

JetStreamApi::JetStreamApi(Connection& connection, std::chrono::milliseconds timeout)
    : connection_(connection), timeout_(timeout) {}

Result<nlohmann::json> JetStreamApi::call(const std::string& subject, const nlohmann::json& body) {
  auto reply = connection_.request(kApi + subject, body.is_null() ? "" : body.dump(), timeout_);
  if (!reply) return reply.error();
  nlohmann::json j = nlohmann::json::parse(reply->data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Result<nlohmann::json>(Errc::protocol, "unreadable answer to " + subject);
  if (auto it = j.find("error"); it != j.end() && it->is_object()) {
    int code = it->value("err_code", it->value("code", 0));
    return Error{std::error_code(code, jetstream_category()),
                 it->value("description", std::string("JetStream API error"))};
  }
  return j;
}

Result<std::vector<std::string>> JetStreamApi::stream_names() {
  std::vector<std::string> names;
  for (;;) {
    auto page = call("STREAM.NAMES", {{"offset", names.size()}});
    if (!page) return page.error();
    auto streams = get_or<std::vector<std::string>>(*page, "streams", {});
    names.insert(names.end(), streams.begin(), streams.end());
    if (streams.empty() || names.size() >= get_or<size_t>(*page, "total", 0)) return names;
  }
}

Result<std::vector<std::string>> JetStreamApi::streams_holding(const std::string& subject) {
  // The server matches the subject against every stream's subjects (wildcards included).
  auto answer = call("STREAM.NAMES", {{"subject", subject}});
  if (!answer) return answer.error();
  return get_or<std::vector<std::string>>(*answer, "streams", {});
}

Result<std::string> JetStreamApi::find_stream(const std::string& subject) {
  auto streams = streams_holding(subject);
  if (!streams) return streams.error();
  if (streams->empty())
    return Result<std::string>(Errc::no_stream_for_subject, "no stream holds subject " + subject);
  return streams->front();
}

Result<StreamInfo> JetStreamApi::stream_info(const std::string& stream) {
  auto answer = call("STREAM.INFO." + stream, nullptr);
  if (!answer) return answer.error();
  return parse_stream_info(*answer);
}

Result<StreamInfo> JetStreamApi::create_stream(const StreamConfig& config) {
  auto answer = call("STREAM.CREATE." + config.name, to_json(config));
  if (!answer) return answer.error();
  return parse_stream_info(*answer);
}

Result<void> JetStreamApi::delete_stream(const std::string& stream) {
  auto answer = call("STREAM.DELETE." + stream, nullptr);
  if (!answer) return answer.error();
  return {};
}

Result<std::vector<std::string>> JetStreamApi::consumer_names(const std::string& stream) {
  std::vector<std::string> names;
  for (;;) {
    auto page = call("CONSUMER.NAMES." + stream, {{"offset", names.size()}});
    if (!page) return page.error();
    auto consumers = get_or<std::vector<std::string>>(*page, "consumers", {});
    names.insert(names.end(), consumers.begin(), consumers.end());
    if (consumers.empty() || names.size() >= get_or<size_t>(*page, "total", 0)) return names;
  }
}

Result<ConsumerInfo> JetStreamApi::consumer_info(const std::string& stream,
                                                 const std::string& consumer) {
  auto answer = call("CONSUMER.INFO." + stream + "." + consumer, nullptr);
  if (!answer) return answer.error();
  return parse_consumer_info(*answer);
}

namespace {

// A durable by its durable_name; an ephemeral by its name (server 2.9 and later), which lets a
// replica recreate its own ephemeral under the same name. `action` ("create" or "update") is
// what server 2.10 and later hold the call to; 2.9 ignores it (an upsert).
Result<ConsumerInfo> put_consumer(JetStreamApi& api, const std::string& stream,
                                  const ConsumerConfig& config, const char* action) {
  const bool durable = !config.durable_name.empty();
  auto answer =
      api.call(std::string(durable ? "CONSUMER.DURABLE.CREATE." : "CONSUMER.CREATE.") + stream +
                   "." + config.consumer_name(),
               {{"stream_name", stream}, {"config", to_json(config)}, {"action", action}});
  if (!answer) return answer.error();
  return parse_consumer_info(*answer);
}

}  // namespace

Result<ConsumerInfo> JetStreamApi::create_consumer(const std::string& stream,
                                                   const ConsumerConfig& config) {
  return put_consumer(*this, stream, config, "create");
}

Result<ConsumerInfo> JetStreamApi::update_consumer(const std::string& stream,
                                                   const ConsumerConfig& config) {
  return put_consumer(*this, stream, config, "update");
}

Result<void> JetStreamApi::delete_consumer(const std::string& stream, const std::string& consumer) {
  auto answer = call("CONSUMER.DELETE." + stream + "." + consumer, nullptr);
  if (!answer) return answer.error();
  return {};
}

Result<void> JetStreamApi::step_down_consumer_leader(const std::string& stream,
                                                     const std::string& consumer) {
  auto answer = call("CONSUMER.LEADER.STEPDOWN." + stream + "." + consumer, nullptr);
  if (!answer) return answer.error();
  return {};
}

Result<StoredMessage> JetStreamApi::get_message(const std::string& stream, uint64_t seq,
                                                const std::string& subject) {
  nlohmann::json body = {{"seq", seq}};
  if (!subject.empty()) body["next_by_subj"] = subject;
  auto answer = call("STREAM.MSG.GET." + stream, body);
  if (!answer) return answer.error();
  return parse_stored_message(answer->value("message", nlohmann::json()));
}

Result<StoredMessage> JetStreamApi::last_message(const std::string& stream,
                                                 const std::string& subject) {
  auto answer = call("STREAM.MSG.GET." + stream, {{"last_by_subj", subject}});
  if (!answer) return answer.error();
  return parse_stored_message(answer->value("message", nlohmann::json()));
}

Result<void> JetStreamApi::delete_message(const std::string& stream, uint64_t seq) {
  // no_erase: the message is removed from the index; overwriting its bytes is not needed here.
  auto answer = call("STREAM.MSG.DELETE." + stream, {{"seq", seq}, {"no_erase", true}});
  if (!answer) return answer.error();
  if (!get_or<bool>(*answer, "success", false))
    return Result<void>(Errc::protocol,
                        "stream " + stream + " did not confirm deleting " + std::to_string(seq));
  return {};
}

Result<uint64_t> JetStreamApi::purge_subject(const std::string& stream,
                                             const std::string& subject) {
  auto answer = call("STREAM.PURGE." + stream, {{"filter", subject}});
  if (!answer) return answer.error();
  return get_or<uint64_t>(*answer, "purged", 0);
}

Result<uint64_t> JetStreamApi::subject_messages(const std::string& stream,
                                                const std::string& subject) {
  auto answer = call("STREAM.INFO." + stream, {{"subjects_filter", subject}});
  if (!answer) return answer.error();
  const auto& state = answer->value("state", nlohmann::json::object());
  uint64_t total = 0;
  if (auto it = state.find("subjects"); it != state.end() && it->is_object())
    for (const auto& [name, count] : it->items()) total += count.get<uint64_t>();
  return total;
}

Result<std::vector<std::string>> JetStreamApi::subjects(const std::string& stream,
                                                        const std::string& filter) {
  auto answer = call("STREAM.INFO." + stream, {{"subjects_filter", filter}});
  if (!answer) return answer.error();
  const auto& state = answer->value("state", nlohmann::json::object());
  std::vector<std::string> names;
  if (auto it = state.find("subjects"); it != state.end() && it->is_object())
    for (const auto& [name, count] : it->items()) names.push_back(name);
  return names;
}

Result<PublishAck> JetStreamApi::publish(const std::string& subject, const std::string& data,
                                         const Headers& headers) {
  auto reply = connection_.request(subject, data, headers, timeout_);
  if (!reply) {
    if (reply.error().code == Errc::no_responders)
      return Result<PublishAck>(Errc::no_responders,
                                "no stream answered for " + subject +
                                    " (none holds it, or the one that does has no leader now)");
    return reply.error();
  }
  return parse_publish_ack(reply->data, subject);
}

Result<PublishAck> parse_publish_ack(const std::string& reply, const std::string& subject) {
  nlohmann::json ack = nlohmann::json::parse(reply, nullptr, /*allow_exceptions=*/false);
  if (!ack.is_object()) return Result<PublishAck>(Errc::protocol, "unreadable ack from " + subject);
  if (auto it = ack.find("error"); it != ack.end() && it->is_object())
    return Error{std::error_code(it->value("err_code", it->value("code", 0)), jetstream_category()),
                 it->value("description", std::string("publish refused"))};
  if (!ack.contains("seq"))
    return Result<PublishAck>(Errc::protocol, "unreadable ack from " + subject);
  return PublishAck{get_or<std::string>(ack, "stream", ""), get_or<uint64_t>(ack, "seq", 0),
                    get_or<bool>(ack, "duplicate", false)};
}

}  // namespace natsfleet::nats
