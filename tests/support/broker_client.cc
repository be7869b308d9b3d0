#include "support/broker_client.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "support/nats_server.h"

namespace natsfleet::testing {

using std::chrono::milliseconds;
using std::chrono::seconds;

BrokerClient::BrokerClient(const std::vector<std::string>& servers) {
  nats::ConnectOptions options;
  options.servers = servers;
  options.name = "test-admin";
  options.reconnect_wait_min = milliseconds(20);
  options.reconnect_wait_max = milliseconds(200);
  auto conn = nats::Connection::open(options, {});
  if (!conn) throw std::runtime_error("test client: " + conn.error().describe());
  connection_ = std::move(conn.value());
  if (!wait_for([&] { return connection_->connected(); }, seconds(10)))
    throw std::runtime_error("test client: not connected after 10 s");
  api_ = std::make_unique<nats::JetStreamApi>(*connection_, seconds(5));
}

void BrokerClient::create_stream(const std::string& name, const std::vector<std::string>& subjects,
                                 int replicas) {
  const nats::StreamConfig config{.name = name,
                                  .subjects = subjects,
                                  .duplicate_window = std::chrono::minutes(2),
                                  .num_replicas = replicas};
  std::string last;
  bool created = wait_for(
      [&] {
        auto r = api_->create_stream(config);
        if (!r) last = r.error().describe();
        return r.ok();
      },
      seconds(20), milliseconds(200));
  if (!created) throw std::runtime_error("create stream " + name + ": " + last);
}

uint64_t BrokerClient::publish(const std::string& subject, const std::string& data) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    auto reply = connection_->request(subject, data, seconds(2));
    if (reply && reply->status == 0) {
      auto j = nlohmann::json::parse(reply->data, nullptr, false);
      if (j.is_object() && j.contains("seq")) return j["seq"].get<uint64_t>();
    }
    std::this_thread::sleep_for(milliseconds(100));  // a leader election or a restart
  }
  throw std::runtime_error("publish to " + subject + " was never acked");
}

void BrokerClient::publish_many(const std::string& subject, int count, const std::string& prefix,
                                int first) {
  // Acked publishes in windows: fast, and each window is confirmed before the next.
  const std::string inbox = connection_->new_inbox();
  std::mutex mu;
  std::condition_variable cv;
  int acked = 0;
  auto sub = connection_->subscribe(inbox, "", [&](nats::InboundMessage&& m) {
    if (m.data.find("\"seq\"") == std::string::npos) return;
    std::lock_guard lock(mu);
    ++acked;
    cv.notify_all();
  });
  if (!sub) throw std::runtime_error("publish_many: " + sub.error().describe());
  constexpr int kWindow = 500;
  for (int start = 0; start < count; start += kWindow) {
    const int end = std::min(count, start + kWindow);
    {
      std::lock_guard lock(mu);
      acked = 0;
    }
    for (int i = start; i < end; ++i)
      (void)connection_->publish(subject, prefix + std::to_string(first + i), inbox);
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, seconds(10), [&] { return acked >= end - start; })) {
      lock.unlock();
      // Fall back to one-by-one for the unconfirmed window (never leaves a gap: dedup by id is
      // not needed because tests count distinct payloads).
      for (int i = start; i < end; ++i) publish(subject, prefix + std::to_string(first + i));
    }
  }
}

nats::ConsumerInfo BrokerClient::consumer(const std::string& stream, const std::string& name) {
  auto info = api_->consumer_info(stream, name);
  if (!info) throw std::runtime_error("consumer info: " + info.error().describe());
  return info.value();
}

void BrokerClient::delete_consumer(const std::string& stream, const std::string& name) {
  auto r = api_->delete_consumer(stream, name);
  if (!r) throw std::runtime_error("delete consumer: " + r.error().describe());
}

}  // namespace natsfleet::testing
