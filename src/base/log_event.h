// One log line with typed fields (base/log_fields.h): the JSON format writes them beside "msg".
// For targets that log through spdlog.
#pragma once

#include <spdlog/spdlog.h>

#include <initializer_list>
#include <utility>

#include "base/log_fields.h"

namespace natsfleet::base {

template <typename... Args>
void log_event(spdlog::logger& logger, spdlog::level::level_enum level,
               std::initializer_list<LogField> fields, spdlog::format_string_t<Args...> format,
               Args&&... args) {
  if (!logger.should_log(level)) return;
  LogScope scope(fields);
  logger.log(level, format, std::forward<Args>(args)...);
}

}  // namespace natsfleet::base
