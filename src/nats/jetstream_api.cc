#include "nats/jetstream_api.h"

#include <array>

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

Result<StoredMessage> JetStreamApi::get_message(const std::string& stream, uint64_t seq,
                                                const std::string& subject) {
  nlohmann::json body = {{"seq", seq}};
  if (!subject.empty()) body["next_by_subj"] = subject;
  auto answer = call("STREAM.MSG.GET." + stream, body);
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

Result<PublishAck> JetStreamApi::publish(const std::string& subject, const std::string& data,
                                         const Headers& headers) {
  auto reply = connection_.request(subject, data, headers, timeout_);
  if (!reply) {
    if (reply.error().code == Errc::no_responders)
      return Result<PublishAck>(Errc::no_stream_for_subject, "no stream holds " + subject);
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
