#include "daemon/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>

#include "base/json_text.h"
#include "base/log_fields.h"
#include "base/utc_time.h"
#include "natsfleet/redact.h"

namespace natsfleet::daemon {
namespace {

// {"time":"2026-11-29T21:49:45.123Z","level":"info","logger":"mailer","msg":"...",
//  "event":"lease-lost","work":"orders","partition":3}: the thread's typed fields
// (base/log_fields.h) after "msg", each key once (the innermost), strings redacted as the msg is.
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
    append_fields(line);
    line += "}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }

 private:
  static void append_fields(std::string& line) {
    const auto fields = base::current_log_fields();
    for (size_t i = 0; i < fields.size(); ++i) {
      const std::string_view key = fields[i].key;
      if (key == "time" || key == "level" || key == "logger" || key == "msg") continue;
      const bool replaced = std::any_of(fields.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                        fields.end(), [&](const auto& f) { return f.key == key; });
      if (replaced) continue;
      line += ',';
      base::append_json_string(line, key);
      line += ':';
      std::visit(
          [&](const auto& v) {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>)
              base::append_json_string(line, redact(v));
            else
              line += std::to_string(v);
          },
          fields[i].value);
    }
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
