#include "sinks/http_sink.h"

#include <openssl/ssl.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <map>
#include <stdexcept>
#include <string_view>

#include "base/backoff.h"
#include "base/endpoint.h"
#include "natsfleet/redact.h"
#include "sinks/record.h"

namespace natsfleet::sinks {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kMaxRetryAfter{300};
constexpr std::chrono::seconds kBackoffBase{1};
constexpr std::chrono::seconds kBackoffMax{60};
// The body is only read for the error text; a huge one is cut off, not buffered.
constexpr uint64_t kMaxResponseBody = 1u << 20;

bool iequals_prefix(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  return true;
}

bool is_ip_literal(const std::string& host) {
  boost::system::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

std::string short_body(const std::string& body) {
  std::string text = body.substr(0, 200);
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

}  // namespace

Result<HttpUrl> parse_http_url(std::string_view url) {
  HttpUrl out;
  std::string_view rest;
  if (iequals_prefix(url, "http://")) {
    rest = url.substr(7);
  } else if (iequals_prefix(url, "https://")) {
    out.tls = true;
    rest = url.substr(8);
  } else {
    return Result<HttpUrl>(Errc::invalid_argument, "url must start with http:// or https://");
  }
  if (rest.find('#') != std::string_view::npos) {
    return Result<HttpUrl>(Errc::invalid_argument, "url may not have a fragment");
  }
  const size_t authority_end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, authority_end);
  std::string_view target =
      authority_end == std::string_view::npos ? std::string_view() : rest.substr(authority_end);
  if (authority.find('@') != std::string_view::npos) {
    return Result<HttpUrl>(Errc::invalid_argument, "url may not carry credentials; use headers");
  }
  const auto parsed = base::parse_url(url);
  if (!parsed) {
    return Result<HttpUrl>(Errc::invalid_argument, "url " + parsed.error().message);
  }
  out.host = parsed->host;
  if (!parsed->port) {
    out.port = out.tls ? "443" : "80";
  } else if (*parsed->port == 0) {
    return Result<HttpUrl>(Errc::invalid_argument, "url has a bad port");
  } else {
    out.port = std::to_string(*parsed->port);
  }
  out.target = target.empty()          ? "/"
               : target.front() == '?' ? "/" + std::string(target)
                                       : std::string(target);
  return out;
}

std::chrono::milliseconds http_retry_delay(std::string_view retry_after, uint64_t delivered) {
  while (!retry_after.empty() && std::isspace(static_cast<unsigned char>(retry_after.front())))
    retry_after.remove_prefix(1);
  while (!retry_after.empty() && std::isspace(static_cast<unsigned char>(retry_after.back())))
    retry_after.remove_suffix(1);
  if (!retry_after.empty() && std::all_of(retry_after.begin(), retry_after.end(),
                                          [](char c) { return c >= '0' && c <= '9'; })) {
    // More than six digits is past the cap anyway; this keeps stoll in range.
    if (retry_after.size() > 6) return kMaxRetryAfter;
    return std::min<std::chrono::milliseconds>(
        std::chrono::seconds(std::stoll(std::string(retry_after))), kMaxRetryAfter);
  }
  return base::exponential_delay(kBackoffBase, kBackoffMax, delivered > 0 ? delivered - 1 : 0);
}

struct HttpSink::Tls {
  ssl::context context{ssl::context::tls_client};
};

// One TCP (or TLS) connection with its own io_context, used by one delivery at a time. Each
// step starts an asynchronous operation and runs the context until it completes or the
// delivery's deadline passes, which gives a synchronous call with a real timeout.
class HttpSink::Connection {
 public:
  struct Reply {
    beast::error_code error;
    bool got_bytes = false;  // some of a response arrived (so the request was not just lost)
    http::response<http::string_body> response;
    bool reusable = false;
  };

  explicit Connection(Tls* tls) : resolver_(ioc_) {
    if (tls)
      secure_.emplace(ioc_, tls->context);
    else
      plain_.emplace(ioc_);
  }

  beast::tcp_stream& lowest() { return secure_ ? beast::get_lowest_layer(*secure_) : *plain_; }

  // From another thread (stop()): the exchange in progress ends at once as aborted.
  void abort() {
    aborted_ = true;
    ioc_.stop();
  }

  // An idle connection the server has closed (or written to) is readable; it is not reused.
  bool looks_alive() {
    if (!lowest().socket().is_open()) return false;
    pollfd p{lowest().socket().native_handle(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
  }

  beast::error_code connect(const HttpUrl& url, Clock::time_point deadline) {
    tcp::resolver::results_type endpoints;
    auto ec = run(deadline, [&](auto done) {
      resolver_.async_resolve(url.host, url.port,
                              [&endpoints, done](beast::error_code e, auto results) mutable {
                                endpoints = std::move(results);
                                done(e);
                              });
    });
    if (ec) return ec;
    ec = run(deadline, [&](auto done) { lowest().async_connect(endpoints, done); });
    if (ec) return ec;
    lowest().socket().set_option(tcp::no_delay(true), ec);
    if (!secure_) return {};
    // SNI carries names only; certificates for IP literals are checked against the address.
    if (!is_ip_literal(url.host) &&
        !SSL_set_tlsext_host_name(secure_->native_handle(), url.host.c_str()))
      return beast::error_code(static_cast<int>(::ERR_get_error()), net::error::get_ssl_category());
    secure_->set_verify_mode(ssl::verify_peer, ec);
    if (!ec) secure_->set_verify_callback(ssl::host_name_verification(url.host), ec);
    if (ec) return ec;
    return run(deadline,
               [&](auto done) { secure_->async_handshake(ssl::stream_base::client, done); });
  }

  Reply exchange(http::request<http::string_body>& request, Clock::time_point deadline) {
    Reply reply;
    reply.error = run(deadline, [&](auto done) {
      if (secure_)
        http::async_write(*secure_, request, done);
      else
        http::async_write(*plain_, request, done);
    });
    if (reply.error) return reply;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBody);
    reply.error = run(deadline, [&](auto done) {
      if (secure_)
        http::async_read(*secure_, buffer_, parser, done);
      else
        http::async_read(*plain_, buffer_, parser, done);
    });
    reply.got_bytes = parser.got_some();
    if (reply.error == http::error::body_limit && parser.is_header_done()) {
      reply.error = {};  // the status is what matters; the connection is not reused
      reply.response = parser.release();
      return reply;
    }
    if (reply.error) return reply;
    reply.response = parser.release();
    reply.reusable = reply.response.keep_alive();
    return reply;
  }

 private:
  template <class Start>
  beast::error_code run(Clock::time_point deadline, Start&& start) {
    std::optional<beast::error_code> result;
    start([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc_.restart();
    // aborted_ is set before ioc_.stop(): either it is seen here or run_until sees the stop.
    if (!aborted_) ioc_.run_until(deadline);
    if (!result) {
      // Cancelling makes the pending operation complete; its handler must run before `result`
      // goes out of scope.
      resolver_.cancel();
      lowest().close();
      ioc_.restart();
      ioc_.run();
      return aborted_ ? beast::error_code(net::error::operation_aborted) : beast::error::timeout;
    }
    return *result;
  }

  std::atomic<bool> aborted_{false};
  net::io_context ioc_;
  tcp::resolver resolver_;
  std::optional<beast::tcp_stream> plain_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure_;
  beast::flat_buffer buffer_;
};

HttpSink::HttpSink(HttpSinkOptions options) : options_(std::move(options)) {
  auto url = parse_http_url(options_.url);
  if (!url)
    throw std::invalid_argument("http sink: " + url.error().describe() + ": " +
                                redact_url(options_.url));
  url_ = std::move(*url);
  const bool default_port = url_.port == (url_.tls ? "443" : "80");
  const bool v6 = url_.host.find(':') != std::string::npos;
  host_header_ = (v6 ? "[" + url_.host + "]" : url_.host) + (default_port ? "" : ":" + url_.port);
  if (url_.tls) {
    tls_ = std::make_unique<Tls>();
    boost::system::error_code ec;
    tls_->context.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                              ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                              ssl::context::no_tlsv1_1);
    tls_->context.set_default_verify_paths(ec);
    if (ec) throw std::invalid_argument("http sink: system CA certificates: " + ec.message());
    if (!options_.ca_file.empty()) {
      tls_->context.load_verify_file(options_.ca_file, ec);
      if (ec)
        throw std::invalid_argument("http sink: ca file " + options_.ca_file + ": " + ec.message());
    }
  }
}

HttpSink::~HttpSink() { stop(); }

void HttpSink::stop() {
  std::vector<std::unique_ptr<Connection>> idle;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    idle.swap(idle_);
    for (auto* connection : active_) connection->abort();
  }
}

bool HttpSink::begin_exchange(Connection* connection) {
  std::lock_guard lock(mu_);
  if (stopped_) return false;
  active_.insert(connection);
  return true;
}

void HttpSink::end_exchange(Connection* connection) {
  std::lock_guard lock(mu_);
  active_.erase(connection);
}

std::unique_ptr<HttpSink::Connection> HttpSink::take_idle() {
  std::lock_guard lock(mu_);
  while (!idle_.empty()) {
    auto connection = std::move(idle_.back());
    idle_.pop_back();
    if (connection->looks_alive()) return connection;
  }
  return nullptr;
}

void HttpSink::give_back(std::unique_ptr<Connection> connection) {
  std::lock_guard lock(mu_);
  if (!stopped_ && idle_.size() < options_.max_idle_connections)
    idle_.push_back(std::move(connection));
}

namespace {

// The message header `name` (any case), or nullptr.
const std::string* header_value(const Headers& headers, std::string_view name) {
  for (const auto& [key, values] : headers)
    if (!values.empty() && key.size() == name.size() &&
        std::equal(key.begin(), key.end(), name.begin(),
                   [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; }))
      return &values.front();
  return nullptr;
}

bool lower_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// W3C Trace Context: version 2 hex, trace id 32, parent id 16, flags 2, dash-separated; the
// ids not all zeros. A version above 00 may append fields after the flags.
bool valid_traceparent(std::string_view v) {
  if (v.size() < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-') return false;
  if (v.size() > 55 && (v.substr(0, 2) == "00" || v[55] != '-')) return false;
  const auto version = v.substr(0, 2), trace = v.substr(3, 32), parent = v.substr(36, 16);
  return lower_hex(version) && version != "ff" && lower_hex(trace) && lower_hex(parent) &&
         lower_hex(v.substr(53, 2)) && trace != std::string(32, '0') &&
         parent != std::string(16, '0');
}

// tracestate goes with a valid traceparent only, and only printable ASCII (no line breaks).
bool printable(std::string_view v) {
  return v.size() <= 512 &&
         std::all_of(v.begin(), v.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// The endpoint is unreachable, overloaded or failing: the message is fine (retry, honouring
// Retry-After).
SinkResult retry_later(const Message& message, std::string error,
                       std::string_view retry_after = {}) {
  const auto after = retry_after.empty() ? std::chrono::milliseconds(0)
                                         : http_retry_delay(retry_after, message.delivered());
  return SinkResult{Disposition::retry(after), {}, std::move(error)};
}

// The POST of `message`: the record as its body, the headers HttpSink::deliver lists, the
// publisher's trace context, and the configured `extra` headers.
http::request<http::string_body> make_request(const HttpUrl& url, const std::string& host,
                                              const std::map<std::string, std::string>& extra,
                                              const Message& message,
                                              const std::string& subscription) {
  http::request<http::string_body> request{http::verb::post, url.target, 11};
  request.set(http::field::host, host);
  request.set(http::field::user_agent, "natsfleet");
  request.set(http::field::content_type, "application/json");
  request.set("Nats-Subject", message.subject());
  if (const auto& d = message.delivery()) {
    request.set("Nats-Stream", d->stream);
    request.set("Nats-Sequence", std::to_string(d->stream_seq));
  }
  // Ordered work's fencing token, with Nats-Sequence: the endpoint refuses a late write.
  if (const auto& fence = message.fence()) {
    request.set("Natsfleet-Partition", std::to_string(fence->partition));
    request.set("Natsfleet-Epoch", std::to_string(fence->epoch));
  }
  request.set("Nats-Delivered", std::to_string(message.delivered()));
  // A publisher's trace continues into the service: its W3C trace context passes on.
  if (const auto* parent = header_value(message.headers(), "traceparent");
      parent && valid_traceparent(*parent)) {
    request.set("traceparent", *parent);
    if (const auto* state = header_value(message.headers(), "tracestate");
        state && printable(*state))
      request.set("tracestate", *state);
  }
  for (const auto& [name, value] : extra) request.set(name, value);
  request.body() = record_json(message, subscription);
  request.prepare_payload();
  return request;
}

// What the endpoint's answer (from `url`, redacted in what it says) makes of the message: 2xx done;
// 408, 429 and 5xx a retry (the endpoint is busy or failing); another 4xx rejects it for good; 1xx
// and 3xx (redirects are not followed) a nak, for max_deliver to decide.
SinkResult judge_response(const http::response<http::string_body>& response, const Message& message,
                          const std::string& url) {
  const unsigned status = response.result_int();
  if (status >= 200 && status < 300) return {};
  const std::string text =
      "POST " + redact_url(url) + ": " + std::to_string(status) + " " + short_body(response.body());
  if (status == 408 || status == 429 || status >= 500) {
    const auto retry_after = response[http::field::retry_after];
    return retry_later(message, text, std::string_view(retry_after.data(), retry_after.size()));
  }
  if (status >= 400) return SinkResult{Disposition::term(), {}, text};
  return SinkResult{Disposition::nak(http_retry_delay({}, message.delivered())),
                    {},
                    text + " (redirects are not followed)"};
}

}  // namespace

SinkResult HttpSink::deliver(const Message& message, const std::string& subscription) {
  try {
    {
      std::lock_guard lock(mu_);
      if (stopped_) return retry_later(message, "http sink stopped");
    }
    const auto deadline = Clock::now() + options_.timeout;
    auto request = make_request(url_, host_header_, options_.headers, message, subscription);
    const auto failed = [&](const beast::error_code& ec) {
      const std::string url = redact_url(options_.url);
      return retry_later(message, ec == beast::error::timeout
                                      ? "POST " + url + ": timed out after " +
                                            std::to_string(options_.timeout.count()) + "ms"
                                      : "POST " + url + ": " + ec.message());
    };
    Connection::Reply reply;
    // A kept-alive connection may have been closed by the server just as it was reused; one
    // retry on a fresh connection covers that without hiding a server that really fails.
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto connection = take_idle();
      const bool reused = connection != nullptr;
      if (!connection) connection = std::make_unique<Connection>(tls_.get());
      if (!begin_exchange(connection.get())) return retry_later(message, "http sink stopped");
      struct Active {
        HttpSink& sink;
        Connection* connection;
        ~Active() { sink.end_exchange(connection); }
      } active{*this, connection.get()};
      if (!reused) {
        if (auto ec = connection->connect(url_, deadline)) return failed(ec);
      }
      reply = connection->exchange(request, deadline);
      if (reply.error && reused && !reply.got_bytes && reply.error != beast::error::timeout)
        continue;
      if (!reply.error && reply.reusable) give_back(std::move(connection));
      break;
    }
    if (reply.error) return failed(reply.error);
    return judge_response(reply.response, message, options_.url);
  } catch (const std::exception& e) {
    return retry_later(message, "http sink: " + redact(e.what()));
  }
}

}  // namespace natsfleet::sinks
