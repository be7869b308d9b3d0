// POSTs each sink record to an HTTP(S) endpoint and maps the response to a disposition:
// 2xx ack; 408, 429 and 5xx (and timeouts, refused or broken connections, DNS failures) retry,
// honouring Retry-After; any other 4xx term; 1xx and 3xx nak. Connections are kept alive and
// reused; stop() cancels the requests in flight.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "natsfleet/redact.h"
#include "sinks/sink.h"

namespace natsfleet::sinks {

struct HttpUrl {
  bool tls = false;
  std::string host;    // without brackets for IPv6
  std::string port;    // explicit or the scheme's default
  std::string target;  // path and query, "/" at least
};

// Errc::invalid_argument, saying why, unless the scheme is http or https and a host is present.
// Userinfo and fragments are refused rather than silently dropped.
Result<HttpUrl> parse_http_url(std::string_view url);

// The redelivery delay for a retryable failure: Retry-After in its delta-seconds form, capped at
// 5 minutes; otherwise (absent, or an HTTP date) 1s doubling with each delivery, capped at 60s.
std::chrono::milliseconds http_retry_delay(std::string_view retry_after, uint64_t delivered);

class HttpSink : public Sink {
 public:
  // Throws std::invalid_argument for an unusable url or a ca_file that cannot be loaded.
  explicit HttpSink(HttpSinkOptions options);
  ~HttpSink() override;
  HttpSink(const HttpSink&) = delete;
  HttpSink& operator=(const HttpSink&) = delete;

  // Headers sent: Content-Type: application/json, Nats-Subject, Nats-Delivered, and for
  // JetStream messages Nats-Stream and Nats-Sequence (the stream sequence); for ordered work's
  // deliveries also Natsfleet-Partition and Natsfleet-Epoch (the rest of the fencing token).
  SinkResult deliver(const Message& message, const std::string& subscription) override;
  std::string describe() const override { return "http " + redact_url(options_.url); }
  void stop() override;

 private:
  class Connection;
  struct Tls;

  std::unique_ptr<Connection> take_idle();
  void give_back(std::unique_ptr<Connection> connection);
  // Registers a connection in use, so stop() can abort it; false once stopped.
  bool begin_exchange(Connection* connection);
  void end_exchange(Connection* connection);

  const HttpSinkOptions options_;
  HttpUrl url_;
  std::string host_header_;
  std::unique_ptr<Tls> tls_;  // null for http
  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::set<Connection*> active_;
  bool stopped_ = false;
};

}  // namespace natsfleet::sinks
