#include "nats/jetstream_api.h"

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

}  // namespace

StreamInfo parse_stream_info(const nlohmann::json& j) {
  StreamInfo info;
  const auto& config = j.value("config", nlohmann::json::object());
  info.name = get_or<std::string>(config, "name", "");
  info.subjects = get_or<std::vector<std::string>>(config, "subjects", {});
  const auto& state = j.value("state", nlohmann::json::object());
  info.messages = get_or<uint64_t>(state, "messages", 0);
  info.first_seq = get_or<uint64_t>(state, "first_seq", 0);
  info.last_seq = get_or<uint64_t>(state, "last_seq", 0);
  if (j.contains("cluster")) info.leader = get_or<std::string>(j["cluster"], "leader", "");
  info.raw = j;
  return info;
}

ConsumerInfo parse_consumer_info(const nlohmann::json& j) {
  ConsumerInfo info;
  info.stream = get_or<std::string>(j, "stream_name", "");
  info.name = get_or<std::string>(j, "name", "");
  info.config = j.value("config", nlohmann::json::object());
  info.num_pending = get_or<uint64_t>(j, "num_pending", 0);
  info.num_ack_pending = get_or<uint64_t>(j, "num_ack_pending", 0);
  info.num_redelivered = get_or<uint64_t>(j, "num_redelivered", 0);
  info.num_waiting = get_or<uint64_t>(j, "num_waiting", 0);
  info.push_bound = get_or<bool>(j, "push_bound", false);
  if (j.contains("delivered"))
    info.delivered_stream_seq = get_or<uint64_t>(j["delivered"], "stream_seq", 0);
  if (j.contains("ack_floor"))
    info.ack_floor_stream_seq = get_or<uint64_t>(j["ack_floor"], "stream_seq", 0);
  info.raw = j;
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

Result<StreamInfo> JetStreamApi::create_stream(const nlohmann::json& config) {
  auto answer = call("STREAM.CREATE." + config.at("name").get<std::string>(), config);
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

Result<ConsumerInfo> JetStreamApi::create_consumer(const std::string& stream,
                                                   const nlohmann::json& config) {
  // A durable by its durable_name; an ephemeral by its name (server 2.9 and later), which lets a
  // replica recreate its own ephemeral under the same name.
  const bool durable = config.contains("durable_name");
  const std::string name = config.at(durable ? "durable_name" : "name").get<std::string>();
  auto answer = call(
      std::string(durable ? "CONSUMER.DURABLE.CREATE." : "CONSUMER.CREATE.") + stream + "." + name,
      {{"stream_name", stream}, {"config", config}});
  if (!answer) return answer.error();
  return parse_consumer_info(*answer);
}

Result<void> JetStreamApi::delete_consumer(const std::string& stream, const std::string& consumer) {
  auto answer = call("CONSUMER.DELETE." + stream + "." + consumer, nullptr);
  if (!answer) return answer.error();
  return {};
}

}  // namespace natsfleet::nats
