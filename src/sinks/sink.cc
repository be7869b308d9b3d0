#include "sinks/sink.h"

#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

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

}  // namespace

std::unique_ptr<Sink> make_sink(const SinkOptions& options) {
  if (options.type == "stdout") return std::make_unique<StdoutSink>();
  if (options.type == "file") {
    if (options.path.empty()) throw std::invalid_argument("file sink: path is empty");
    FsyncPolicy fsync;
    if (options.fsync == "never") {
      fsync = FsyncPolicy::never;
    } else if (options.fsync == "batch") {
      fsync = FsyncPolicy::batch;
    } else {
      throw std::invalid_argument("file sink: fsync must be \"never\" or \"batch\", not \"" +
                                  options.fsync + "\"");
    }
    return std::make_unique<FileSink>(options.path, fsync);
  }
  if (options.type == "websocket") {
    const auto listen = base::parse_endpoint(options.listen);
    if (!listen) throw std::invalid_argument("websocket sink: listen " + listen.error().message);
    WebSocketSinkOptions ws;
    ws.host = listen->host;
    ws.port = listen->port;
    ws.key_token = options.key_token;
    ws.web_root = options.web_root;
    ws.max_sessions = options.max_sessions;
    ws.max_http_connections = options.max_http_connections;
    ws.allowed_origins = options.allowed_origins;
    ws.token_secret_file = options.token_secret_file;
    ws.member_header = options.member_header;
    return std::make_unique<WebSocketSink>(ws);
  }
  if (options.timeout <= std::chrono::milliseconds::zero())
    throw std::invalid_argument(options.type + " sink: timeout must be positive");
  if (options.type == "worker") {
    if (options.command.empty() || options.command.front().empty())
      throw std::invalid_argument("worker sink: command is empty");
    if (!executable_in_path(options.command.front()))
      throw std::invalid_argument("worker sink: " + options.command.front() +
                                  " is not an executable program (no shell is used)");
    WorkerOptions worker;
    worker.argv = options.command;
    worker.timeout = options.timeout;
    return std::make_unique<WorkerSink>(std::move(worker));
  }
  if (options.type == "http") {
    HttpOptions http;
    http.url = options.url;
    http.timeout = options.timeout;
    http.headers = options.headers;
    return std::make_unique<HttpSink>(std::move(http));
  }
  throw std::invalid_argument("unknown sink type \"" + options.type +
                              "\" (file, stdout, worker or http)");
}

}  // namespace natsfleet::sinks
