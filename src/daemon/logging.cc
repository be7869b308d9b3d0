#include "daemon/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <string>

#include "base/json_text.h"
#include "base/utc_time.h"
#include "natsfleet/redact.h"

namespace natsfleet::daemon {
namespace {

// {"time":"2026-11-29T21:49:45.123Z","level":"info","logger":"mailer","msg":"..."}
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string line = "{\"time\":\"" + base::format_utc_millis(msg.time) + "\",\"level\":\"";
    const auto level = spdlog::level::to_string_view(msg.level);
    line.append(level.data(), level.size());
    line += "\",\"logger\":";
    base::append_json_string(line,
                             std::string_view(msg.logger_name.data(), msg.logger_name.size()));
    line += ",\"msg\":";
    base::append_json_string(line, std::string_view(msg.payload.data(), msg.payload.size()));
    line += "}\n";
    dest.append(line.data(), line.data() + line.size());
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

void setup_logging(const std::string& format, const std::string& level) {
  spdlog::drop("natsfleet");
  auto logger = spdlog::stderr_color_mt("natsfleet");
  std::unique_ptr<spdlog::formatter> formatter;
  if (format == "json")
    formatter = std::make_unique<JsonFormatter>();
  else
    formatter =
        std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ [%n] %v");
  logger->set_formatter(std::make_unique<RedactingFormatter>(std::move(formatter)));
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

}  // namespace natsfleet::daemon
