#include "fleet/fleet_log.h"

#include <spdlog/sinks/base_sink.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "base/log_fields.h"

namespace natsfleet::fleet {
namespace {

// Each LogLevel with spdlog's level of the same name.
constexpr std::pair<LogLevel, spdlog::level::level_enum> kLevels[] = {
    {LogLevel::trace, spdlog::level::trace}, {LogLevel::debug, spdlog::level::debug},
    {LogLevel::info, spdlog::level::info},   {LogLevel::warn, spdlog::level::warn},
    {LogLevel::error, spdlog::level::err},   {LogLevel::critical, spdlog::level::critical},
};

LogLevel from_spdlog(spdlog::level::level_enum level) {
  for (const auto& [ours, theirs] : kLevels)
    if (theirs == level) return ours;
  return LogLevel::critical;  // spdlog's `off` is never a line's level
}

spdlog::level::level_enum to_spdlog(LogLevel level) {
  for (const auto& [ours, theirs] : kLevels)
    if (ours == level) return theirs;
  return spdlog::level::info;
}

// Hands each line, with the fields of the scopes open on the logging thread, to log_to.
class HookSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit HookSink(LogHandler hook) : hook_(std::move(hook)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    LogLine line;
    line.level = from_spdlog(msg.level);
    line.message = std::string_view(msg.payload.data(), msg.payload.size());
    for (const auto& field : base::current_log_fields()) {
      std::string text = std::visit(
          [](const auto& v) {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>)
              return v;
            else
              return std::to_string(v);
          },
          field.value);
      // An inner scope's field replaces an outer one of the same key.
      auto same = std::find_if(line.fields.begin(), line.fields.end(),
                               [&](const auto& f) { return f.first == field.key; });
      if (same != line.fields.end())
        same->second = std::move(text);
      else
        line.fields.emplace_back(field.key, std::move(text));
    }
    try {
      hook_(line);
    } catch (...) {  // the application's: dropped, as documented
    }
  }
  void flush_() override {}

 private:
  const LogHandler hook_;
};

}  // namespace

std::shared_ptr<spdlog::logger> make_fleet_logger(const FleetOptions& options) {
  if (!options.log_to) return spdlog::default_logger()->clone(options.name);
  auto logger =
      std::make_shared<spdlog::logger>(options.name, std::make_shared<HookSink>(options.log_to));
  logger->set_level(to_spdlog(options.log_level));
  return logger;
}

}  // namespace natsfleet::fleet
