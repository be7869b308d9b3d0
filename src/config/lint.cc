#include "config/lint.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <variant>

#include "base/duration.h"
#include "base/endpoint.h"
#include "fleet/consumer_shape.h"

namespace natsfleet::config {
namespace {

constexpr int kFileLine = 1;

std::string where(const std::string& file, int line) { return file + ":" + std::to_string(line); }

// The subject two work entries both filter ("" when none): they handle the same messages unless
// they name two explicit, different streams (a subject belongs to one stream, so that pair is a
// different misconfiguration).
std::string shared_subject(const WorkConfig& a, const WorkConfig& b) {
  if (!a.spec.stream.empty() && !b.spec.stream.empty() && a.spec.stream != b.spec.stream) return {};
  const auto theirs = fleet::filter_subjects(b.spec);
  for (const auto& subject : fleet::filter_subjects(a.spec))
    if (std::find(theirs.begin(), theirs.end(), subject) != theirs.end()) return subject;
  return {};
}

// Whether the worker's program starts, found as execvp finds it: a name with a '/' as it is
// (relative to the working directory), any other in PATH.
bool program_runs(const std::string& program) {
  auto executable = [](const std::string& path) {
    std::error_code ec;
    return ::access(path.c_str(), X_OK) == 0 && !std::filesystem::is_directory(path, ec);
  };
  if (program.find('/') != std::string::npos) return executable(program);
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): lint is one thread
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (executable((dir.empty() ? std::string(".") : dir) + "/" + program)) return true;
  return false;
}

void lint_sink(const std::string& file, const sinks::SinkConfig& sink, int line,
               std::vector<LintFinding>& out) {
  if (const auto* worker = std::get_if<sinks::WorkerSinkOptions>(&sink)) {
    const std::string& program = worker->command.front();
    if (!program_runs(program))
      out.push_back({file, line, "worker-not-found",
                     "worker sink's program '" + program + "' is not an executable file" +
                         (program.find('/') == std::string::npos
                              ? std::string(" in PATH")
                              : std::string(" (a relative path is taken from the directory "
                                            "natsfleet runs in)")) +
                         ": the work would hold every message until it exists"});
    return;
  }
  if (const auto* websocket = std::get_if<sinks::WebSocketSinkOptions>(&sink)) {
    const std::string listen = sinks::listen_address(*websocket);
    if (websocket->token_secret_file.empty() && websocket->member_header.empty())
      out.push_back({file, line, "websocket-no-auth",
                     "websocket sink on " + listen +
                         " has no member authentication: any caller that reaches it reads any "
                         "member's statuses by naming the member; set token_secret_file (signed "
                         "member tokens) or member_header (an authenticating proxy)"});
    const auto& origins = websocket->allowed_origins;
    if (std::find(origins.begin(), origins.end(), "*") != origins.end())
      out.push_back({file, line, "websocket-any-origin",
                     "websocket sink on " + listen +
                         " lets pages from any origin attach (allowed_origins = [\"*\"]): any "
                         "web site a member visits can open their session; list your origins"});
    return;
  }
  const auto* http = std::get_if<sinks::HttpSinkOptions>(&sink);
  if (!http) return;
  auto url = base::parse_url(http->url);
  if (url && url->scheme == "http" && !base::is_loopback_host(url->host))
    out.push_back({file, line, "plain-http-remote",
                   "http sink posts to " + url->host +
                       " over plain http://: messages and headers cross the network unencrypted; "
                       "use https://"});
}

void sort_by_line(std::vector<LintFinding>& findings) {
  std::stable_sort(findings.begin(), findings.end(),
                   [](const LintFinding& a, const LintFinding& b) { return a.line < b.line; });
}

// What one work's own settings risk: unlimited redelivery, terminations kept nowhere, idle
// handlers, an ack_wait shorter than its sink's timeout, a work acknowledged on stdout.
void lint_work(const std::string& file, const WorkConfig& work, std::vector<LintFinding>& out) {
  const WorkSpec& spec = work.spec;
  if (spec.failure.max_deliver == -1)
    out.push_back({file, work.line, "unlimited-redelivery",
                   "work '" + spec.name +
                       "' has max_deliver = -1: a message its sink always fails is redelivered "
                       "for ever; set a limit so it is terminated"});
  if (spec.failure.max_deliver > 0 && spec.failure.dead_letter.empty())
    out.push_back({file, work.line, "no-dead-letter",
                   "work '" + spec.name + "' terminates a message after " +
                       std::to_string(spec.failure.max_deliver) +
                       " deliveries and keeps it nowhere (only a log line): set dead_letter = "
                       "\"SUBJECT\" to keep it for natsfleet dead-letters replay"});
  if (spec.flow.max_ack_pending < spec.flow.concurrency)
    out.push_back({file, work.line, "ack-pending-below-concurrency",
                   "work '" + spec.name + "' has max_ack_pending " +
                       std::to_string(spec.flow.max_ack_pending) + " below concurrency " +
                       std::to_string(spec.flow.concurrency) +
                       ": some handlers can never get work"});
  const auto sink_timeout = sinks::delivery_timeout(work.sink);
  if (sink_timeout && spec.flow.ack_wait < *sink_timeout)
    out.push_back({file, work.line, "ack-wait-below-sink-timeout",
                   "work '" + spec.name + "' has ack_wait " +
                       base::format_duration(spec.flow.ack_wait) + " below its " +
                       std::string(sinks::sink_type(work.sink)) + " sink's timeout " +
                       base::format_duration(*sink_timeout) +
                       ": a delivery that outlasts ack_wait lives on in-progress acks, and a "
                       "replica stalled mid-delivery loses it to another while the sink is still "
                       "on it"});
  if (std::holds_alternative<sinks::StdoutSinkOptions>(work.sink))
    out.push_back({file, work.sink_line, "stdout-sink-for-work",
                   "work '" + spec.name +
                       "' is acknowledged once written to stdout, which nothing keeps: use a "
                       "file, worker or http sink"});
  lint_sink(file, work.sink, work.sink_line, out);
}

}  // namespace

std::string to_string(const LintFinding& finding) {
  return where(finding.file, finding.line) + ": " + finding.rule + ": " + finding.message;
}

std::vector<LintFinding> lint(const DaemonConfig& config) {
  std::vector<LintFinding> out;
  const std::string& file = config.file;
  if (config.fleet.servers.empty())
    out.push_back({file, kFileLine, "embedded-broker",
                   "no servers: run starts an embedded broker whose streams live on this machine "
                   "only; fine for a demo, not for production"});

  for (size_t i = 0; i < config.work.size(); ++i) {
    const WorkConfig& work = config.work[i];
    const WorkSpec& spec = work.spec;
    for (size_t j = 0; j < i; ++j) {
      const auto subject = shared_subject(config.work[j], work);
      if (subject.empty() || config.work[j].spec.name == spec.name) continue;
      out.push_back({file, work.line, "duplicate-subject",
                     "work '" + spec.name + "' consumes '" + subject + "' like work '" +
                         config.work[j].spec.name + "' (line " +
                         std::to_string(config.work[j].line) +
                         "): two consumers, so every message is handled twice"});
      break;
    }
    lint_work(file, work, out);
  }

  for (const BroadcastConfig& broadcast : config.broadcast) {
    for (const WorkConfig& work : config.work) {
      if (work.spec.name != broadcast.spec.name) continue;
      out.push_back({file, broadcast.line, "broadcast-shadows-work",
                     "broadcast '" + broadcast.spec.name + "' has the name of work at line " +
                         std::to_string(work.line) + ": logs, metrics and status mix them up"});
      break;
    }
    lint_sink(file, broadcast.sink, broadcast.sink_line, out);
  }
  sort_by_line(out);
  return out;
}

std::vector<LintFinding> lint_all(const std::vector<DaemonConfig>& configs) {
  std::vector<std::vector<LintFinding>> per_file;
  for (const DaemonConfig& config : configs) per_file.push_back(lint(config));

  for (size_t f = 0; f < configs.size(); ++f) {
    const DaemonConfig& config = configs[f];
    // Against earlier files only, so a pair is reported once, on the later entry.
    for (const WorkConfig& work : config.work) {
      bool found = false;
      for (size_t g = 0; g < f && !found; ++g) {
        for (const WorkConfig& other : configs[g].work) {
          const auto subject = shared_subject(other, work);
          if (subject.empty() || other.spec.name == work.spec.name) continue;
          per_file[f].push_back({config.file, work.line, "duplicate-subject",
                                 "work '" + work.spec.name + "' consumes '" + subject +
                                     "' like work '" + other.spec.name + "' in " +
                                     where(configs[g].file, other.line) +
                                     ": two consumers, so every message is handled twice"});
          found = true;
          break;
        }
      }
    }
    for (const BroadcastConfig& broadcast : config.broadcast) {
      bool found = false;
      for (size_t g = 0; g < configs.size() && !found; ++g) {
        if (g == f) continue;
        for (const WorkConfig& work : configs[g].work) {
          if (work.spec.name != broadcast.spec.name) continue;
          per_file[f].push_back(
              {config.file, broadcast.line, "broadcast-shadows-work",
               "broadcast '" + broadcast.spec.name + "' has the name of work in " +
                   where(configs[g].file, work.line) + ": logs, metrics and status mix them up"});
          found = true;
          break;
        }
      }
    }
  }

  std::vector<LintFinding> out;
  for (auto& findings : per_file) {
    sort_by_line(findings);
    out.insert(out.end(), findings.begin(), findings.end());
  }
  return out;
}

}  // namespace natsfleet::config
