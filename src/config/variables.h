// Environment variables in config strings, so one file serves every environment:
//   servers = ["${NATS_URL}"]                  the variable's value; unset is an error
//   listen  = "${HEALTH_LISTEN:-0.0.0.0:8080}"  the default when unset or empty
//   note    = "costs $${PRICE}"                 "$${" stands for a literal "${"
// A "$" not followed by "{" is itself. Names are letters, digits and "_", not starting with a
// digit.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "natsfleet/error.h"

namespace natsfleet::config {

// A variable's value, or nullopt when it is not set.
using VariableLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment.
std::optional<std::string> environment_variable(const std::string& name);

// `text` with every ${...} replaced. The error names the variable (never a value): an unset one
// without a default, an unclosed "${", an empty or malformed name.
Result<std::string> expand_variables(std::string_view text,
                                     const VariableLookup& lookup = environment_variable);

}  // namespace natsfleet::config
