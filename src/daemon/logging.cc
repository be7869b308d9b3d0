#include "daemon/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <string>

#include "natsfleet/redact.h"

namespace natsfleet::daemon {
namespace {

void append_escaped(std::string_view in, spdlog::memory_buf_t& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (char c : in) {
    switch (c) {
      case '"':
        out.append(std::string_view("\\\""));
        break;
      case '\\':
        out.append(std::string_view("\\\\"));
        break;
      case '\n':
        out.append(std::string_view("\\n"));
        break;
      case '\r':
        out.append(std::string_view("\\r"));
        break;
      case '\t':
        out.append(std::string_view("\\t"));
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          const char esc[] = {'\\', 'u', '0', '0', kHex[(c >> 4) & 0xf], kHex[c & 0xf]};
          out.append(esc, esc + sizeof esc);
        } else {
          out.push_back(c);
        }
    }
  }
}

// {"time":"2026-11-29T21:49:45.123Z","level":"info","logger":"mailer","msg":"..."}
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    using namespace std::chrono;
    const auto since_epoch = msg.time.time_since_epoch();
    const std::time_t secs = duration_cast<seconds>(since_epoch).count();
    const auto millis = duration_cast<milliseconds>(since_epoch).count() % 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char stamp[64];  // ample for any year tm can hold
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(millis));
    dest.append(std::string_view("{\"time\":\""));
    dest.append(std::string_view(stamp));
    dest.append(std::string_view("\",\"level\":\""));
    const auto level = spdlog::level::to_string_view(msg.level);
    dest.append(level.data(), level.data() + level.size());
    dest.append(std::string_view("\",\"logger\":\""));
    append_escaped(std::string_view(msg.logger_name.data(), msg.logger_name.size()), dest);
    dest.append(std::string_view("\",\"msg\":\""));
    append_escaped(std::string_view(msg.payload.data(), msg.payload.size()), dest);
    dest.append(std::string_view("\"}\n"));
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

// Every line, natsfleet's own and nats.c's errors it relays alike, has the secrets of any URL in
// it redacted before it is formatted: a server's password, a sink URL's token.
class RedactingFormatter final : public spdlog::formatter {
 public:
  explicit RedactingFormatter(std::unique_ptr<spdlog::formatter> inner)
      : inner_(std::move(inner)) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    spdlog::details::log_msg redacted = msg;
    const std::string text = redact(std::string_view(msg.payload.data(), msg.payload.size()));
    redacted.payload = spdlog::string_view_t(text.data(), text.size());
    inner_->format(redacted, dest);
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<RedactingFormatter>(inner_->clone());
  }

 private:
  std::unique_ptr<spdlog::formatter> inner_;
};

}  // namespace

void setup_logging(const std::string& format) {
  spdlog::drop("natsfleet");
  auto logger = spdlog::stderr_color_mt("natsfleet");
  std::unique_ptr<spdlog::formatter> formatter;
  if (format == "json")
    formatter = std::make_unique<JsonFormatter>();
  else
    formatter =
        std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ [%n] %v");
  logger->set_formatter(std::make_unique<RedactingFormatter>(std::move(formatter)));
  spdlog::set_default_logger(logger);
}

}  // namespace natsfleet::daemon
