#include "sinks/sink.h"

#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <system_error>
#include <variant>

#include "base/endpoint.h"
#include "sinks/file_sink.h"
#include "sinks/http_sink.h"
#include "sinks/stdout_sink.h"
#include "sinks/websocket_sink.h"
#include "sinks/worker_sink.h"

namespace natsfleet::sinks {
namespace {

// Catching a missing or non-executable worker here turns it into a config error (exit 2 with a
// message) instead of a sink that crash-loops at runtime.
bool executable_in_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  for (;;) {
    const size_t colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? colon : colon - start);
    std::string candidate = dir.empty() ? std::string(".") : dir;
    candidate.append("/").append(program);
    if (::access(candidate.c_str(), X_OK) == 0) return true;
    if (colon == std::string::npos) return false;
    start = colon + 1;
  }
}

std::unique_ptr<Sink> build(const FileSinkOptions& options) {
  return std::make_unique<FileSink>(options);
}

std::unique_ptr<Sink> build(const StdoutSinkOptions&) { return std::make_unique<StdoutSink>(); }

std::unique_ptr<Sink> build(const WorkerSinkOptions& options) {
  // An empty command is the WorkerSink's own error.
  if (!options.command.empty() && !executable_in_path(options.command.front()))
    throw std::invalid_argument("worker sink: " + options.command.front() +
                                " is not an executable program (no shell is used)");
  return std::make_unique<WorkerSink>(options);
}

std::unique_ptr<Sink> build(const HttpSinkOptions& options) {
  return std::make_unique<HttpSink>(options);
}

std::unique_ptr<Sink> build(const WebSocketSinkOptions& options) {
  // Left at 0, every status would go to no session and be acked all the same.
  if (options.key_token < 1)
    throw std::invalid_argument("websocket sink: key_token " + std::to_string(options.key_token) +
                                " names no subject token (they count from 1)");
  return std::make_unique<WebSocketSink>(options);
}

}  // namespace

// The sinks' constructors throw (they are also used alone, by tests); this is where that becomes
// a Result.
Result<std::unique_ptr<Sink>> make_sink(const SinkConfig& config) {
  try {
    return std::visit([](const auto& options) { return build(options); }, config);
  } catch (const std::invalid_argument& e) {
    return Error{make_error_code(Errc::invalid_argument), e.what()};
  } catch (const std::system_error& e) {
    // A sink's own thread (a worker's supervisor, a websocket gateway) the system refused.
    return Error{make_error_code(Errc::no_resources),
                 std::string(sink_type(config)) + " sink: cannot start: " + e.what()};
  }
}

}  // namespace natsfleet::sinks
