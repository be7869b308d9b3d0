#include "base/log_fields.h"

#include <cstddef>

namespace natsfleet::base {
namespace {

thread_local std::vector<LogField> open_fields;

}  // namespace

std::span<const LogField> current_log_fields() { return open_fields; }

LogScope::LogScope(std::initializer_list<LogField> fields) : below_(open_fields.size()) {
  open_fields.insert(open_fields.end(), fields.begin(), fields.end());
}

LogScope::~LogScope() {
  open_fields.erase(open_fields.begin() + static_cast<std::ptrdiff_t>(below_), open_fields.end());
}

}  // namespace natsfleet::base
