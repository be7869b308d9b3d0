#include "deadletters/dead_letters_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "audit/tool_connection.h"
#include "base/duration.h"
#include "deadletters/listing.h"
#include "nats/connection.h"
#include "nats/jetstream_api.h"
#include "natsfleet/redact.h"
#include "natsfleet/validate.h"

namespace natsfleet::deadletters {
namespace {

using std::chrono::steady_clock;

// Why the command could not do anything: said once on `err`, exit 2.
struct Stop {
  std::string why;
};

// A dead-letter subject and the stream holding it.
struct Source {
  std::string subject;
  std::string stream;
};

bool no_message(const Error& error) { return error.is_jetstream(nats::kJsNoMessageFound); }

// A failed call once the connection was up, in words that say what happened.
std::string broker_trouble(const Error& error, const std::string& servers,
                           std::chrono::milliseconds timeout) {
  if (error.code == Errc::no_responders)
    return fmt::format("JetStream is not enabled on {}: nobody answers {}", servers,
                       error.describe());
  if (error.code == Errc::timeout)
    return fmt::format("the broker at {} stopped answering ({}); gave up at the {} timeout",
                       servers, error.describe(), base::format_duration(timeout));
  if (error.code == Errc::not_connected)
    return fmt::format("lost the broker at {}: {}", servers, error.describe());
  return fmt::format("the broker at {} refused: {}", servers, error.describe());
}

// One command's session with the broker: the connection, the deadline, the sources.
class Session {
 public:
  explicit Session(const DeadLettersOptions& options)
      : options_(options),
        deadline_(steady_clock::now() + options.timeout),
        servers_(redact_urls(options.servers)) {}

  // Connects and finds the stream of every subject; a Stop when any of that fails.
  std::optional<Stop> open() {
    if (options_.servers.empty())
      return Stop{"no broker: give --server URL, or --config with servers"};
    if (options_.subjects.empty())
      return Stop{
          "no dead-letter subject: give --subject SUBJECT, or --config with a [[work]] "
          "that has dead_letter"};
    for (const auto& subject : options_.subjects)
      if (auto checked = check_subject(subject, /*allow_wildcards=*/false); !checked)
        return Stop{"--subject: " + checked.error().message};
    if (!options_.to.empty())
      if (auto checked = check_subject(options_.to, /*allow_wildcards=*/false); !checked)
        return Stop{"--to: " + checked.error().message};
    auto connection = audit::connect_once({.servers = options_.servers,
                                           .name = "natsfleet-dead-letters",
                                           .credentials_file = options_.credentials_file,
                                           .auth = options_.auth,
                                           .tls = options_.tls,
                                           .timeout = options_.timeout},
                                          deadline_);
    if (!connection) return Stop{connection.error().describe()};
    connection_ = std::move(connection.value());
    for (const auto& subject : options_.subjects) {
      auto stream = api().find_stream(subject);
      if (!stream && stream.error().code == Errc::no_stream_for_subject)
        return Stop{
            fmt::format("no stream holds dead-letter subject '{}' (on {})", subject, servers_)};
      if (!stream) return trouble(stream.error());
      sources_.push_back({subject, *stream});
    }
    return std::nullopt;
  }

  nats::JetStreamApi api() { return nats::JetStreamApi(*connection_, audit::time_left(deadline_)); }
  Stop trouble(const Error& error) const {
    return Stop{broker_trouble(error, servers_, options_.timeout)};
  }
  const std::vector<Source>& sources() const { return sources_; }

  // Every dead letter each source holds, oldest first.
  std::optional<Stop> read_all(std::vector<Listing>& out) {
    for (const Source& source : sources_) {
      Listing listing{source.subject, source.stream, {}};
      auto info = api().stream_info(source.stream);
      if (!info) return trouble(info.error());
      for (uint64_t seq = std::max<uint64_t>(info->first_seq, 1);;) {
        auto message = api().get_message(source.stream, seq, source.subject);
        if (!message && no_message(message.error())) break;
        if (!message) return trouble(message.error());
        seq = message->seq + 1;
        listing.entries.push_back(describe_entry(std::move(message.value()), source.stream));
      }
      out.push_back(std::move(listing));
    }
    return std::nullopt;
  }

  // The dead letters at options.seqs (each looked up in every source's stream); a sequence that is
  // no dead letter on any subject is a failure, named.
  std::optional<Stop> read_selected(std::vector<DeadLetterEntry>& out,
                                    std::vector<std::string>& failures) {
    for (uint64_t seq : options_.seqs) {
      bool found = false;
      for (const Source& source : sources_) {
        auto message = api().get_message(source.stream, seq);
        if (!message && no_message(message.error())) continue;
        if (!message) return trouble(message.error());
        // A stream may hold other subjects too: those messages are not dead letters.
        if (message->subject != source.subject) continue;
        out.push_back(describe_entry(std::move(message.value()), source.stream));
        found = true;
        break;
      }
      if (!found)
        failures.push_back(fmt::format("sequence {}: no dead letter there on {}", seq,
                                       fmt::join(options_.subjects, ", ")));
    }
    return std::nullopt;
  }

 private:
  const DeadLettersOptions& options_;
  steady_clock::time_point deadline_;
  std::string servers_;
  std::unique_ptr<nats::Connection> connection_;
  std::vector<Source> sources_;
};

std::string name(const DeadLetterEntry& e) { return fmt::format("{}:{}", e.stream, e.seq); }

int stop(std::ostream& err, const std::string& command, const Stop& why) {
  err << "natsfleet: dead-letters " << command << ": " << why.why << "\n";
  return kExitCannot;
}

// The entries a replay or purge works on: the selected sequences, or everything.
std::optional<Stop> targets(Session& session, const DeadLettersOptions& options,
                            std::vector<DeadLetterEntry>& entries,
                            std::vector<std::string>& failures) {
  if (!options.seqs.empty()) return session.read_selected(entries, failures);
  std::vector<Listing> listings;
  if (auto stopped = session.read_all(listings)) return stopped;
  for (auto& listing : listings)
    for (auto& entry : listing.entries) entries.push_back(std::move(entry));
  return std::nullopt;
}

int finish(std::ostream& err, const std::string& command,
           const std::vector<std::string>& failures) {
  for (const auto& failure : failures)
    err << "natsfleet: dead-letters " << command << ": " << failure << "\n";
  return failures.empty() ? kExitDone : kExitSomeFailed;
}

}  // namespace

std::vector<std::string> dead_letter_subjects(const std::vector<std::string>& flags,
                                              const config::DaemonConfig* config) {
  std::vector<std::string> out;
  auto add = [&](const std::string& subject) {
    if (!subject.empty() && std::find(out.begin(), out.end(), subject) == out.end())
      out.push_back(subject);
  };
  if (!flags.empty()) {
    for (const auto& subject : flags) add(subject);
  } else if (config) {
    for (const auto& work : config->work) add(work.spec.failure.dead_letter);
  }
  return out;
}

int list(const DeadLettersOptions& options, std::ostream& out, std::ostream& err) {
  Session session(options);
  if (auto stopped = session.open()) return stop(err, "list", *stopped);
  std::vector<Listing> listings;
  if (auto stopped = session.read_all(listings)) return stop(err, "list", *stopped);
  out << (options.json ? render_json(listings) + "\n" : render_table(listings));
  return kExitDone;
}

int replay(const DeadLettersOptions& options, std::ostream& out, std::ostream& err) {
  Session session(options);
  if (auto stopped = session.open()) return stop(err, "replay", *stopped);
  std::vector<DeadLetterEntry> entries;
  std::vector<std::string> failures;
  if (auto stopped = targets(session, options, entries, failures))
    return stop(err, "replay", *stopped);

  nlohmann::ordered_json replayed = nlohmann::ordered_json::array();
  nlohmann::ordered_json failed = nlohmann::ordered_json::array();
  for (const auto& failure : failures) failed.push_back({{"error", failure}});
  auto fail = [&](const DeadLetterEntry& e, const std::string& why) {
    failures.push_back(fmt::format("{}: {}", name(e), why));
    failed.push_back({{"stream", e.stream}, {"seq", e.seq}, {"error", why}});
  };
  for (const DeadLetterEntry& e : entries) {
    const std::string to = options.to.empty() ? e.origin_subject : options.to;
    if (to.empty()) {
      fail(e, "no Natsfleet-Origin-Subject header: give --to SUBJECT");
      continue;
    }
    auto stored = session.api().publish(to, e.data, replay_headers(e));
    if (!stored) {
      fail(e, fmt::format("not replayed to {}: {}", to, stored.error().describe()));
      continue;
    }
    // Deleted only now: a dead letter whose replay was not stored stays where it is.
    auto deleted = session.api().delete_message(e.stream, e.seq);
    if (!deleted && !no_message(deleted.error())) {
      fail(e, fmt::format("replayed to {} ({}:{}) but not deleted: {}; replaying it again within "
                          "the duplicate window of {} does not store it twice",
                          to, stored->stream, stored->seq, deleted.error().describe(),
                          stored->stream));
      continue;
    }
    replayed.push_back({{"stream", e.stream},
                        {"seq", e.seq},
                        {"to", to},
                        {"stored_stream", stored->stream},
                        {"stored_seq", stored->seq},
                        {"duplicate", stored->duplicate}});
    if (!options.json)
      out << fmt::format("replayed {} -> {} ({}:{}{})\n", name(e), to, stored->stream, stored->seq,
                         stored->duplicate ? ", stored by an earlier try" : "");
  }
  if (options.json)
    out << nlohmann::ordered_json(
               {{"replayed", std::move(replayed)}, {"failed", std::move(failed)}})
               .dump()
        << "\n";
  else
    out << fmt::format("replayed {} of {} dead letter{}\n", replayed.size(), entries.size(),
                       entries.size() == 1 ? "" : "s");
  return finish(err, "replay", failures);
}

int purge(const DeadLettersOptions& options, std::ostream& out, std::ostream& err) {
  Session session(options);
  if (auto stopped = session.open()) return stop(err, "purge", *stopped);
  std::vector<std::string> failures;
  nlohmann::ordered_json purged = nlohmann::ordered_json::array();
  nlohmann::ordered_json failed = nlohmann::ordered_json::array();

  if (options.seqs.empty()) {
    // Only the dead-letter subject: a stream shared with other subjects keeps theirs.
    for (const Source& source : session.sources()) {
      auto count = session.api().purge_subject(source.stream, source.subject);
      if (!count) {
        failures.push_back(fmt::format("{} (stream {}): {}", source.subject, source.stream,
                                       count.error().describe()));
        failed.push_back({{"subject", source.subject},
                          {"stream", source.stream},
                          {"error", count.error().describe()}});
        continue;
      }
      purged.push_back({{"subject", source.subject}, {"stream", source.stream}, {"count", *count}});
      if (!options.json)
        out << fmt::format("purged {} dead letter{} from {} (stream {})\n", *count,
                           *count == 1 ? "" : "s", source.subject, source.stream);
    }
  } else {
    std::vector<DeadLetterEntry> entries;
    if (auto stopped = session.read_selected(entries, failures))
      return stop(err, "purge", *stopped);
    for (const auto& failure : failures) failed.push_back({{"error", failure}});
    for (const DeadLetterEntry& e : entries) {
      auto deleted = session.api().delete_message(e.stream, e.seq);
      if (!deleted && !no_message(deleted.error())) {
        failures.push_back(fmt::format("{}: {}", name(e), deleted.error().describe()));
        failed.push_back(
            {{"stream", e.stream}, {"seq", e.seq}, {"error", deleted.error().describe()}});
        continue;
      }
      purged.push_back({{"subject", e.subject}, {"stream", e.stream}, {"seq", e.seq}});
      if (!options.json) out << fmt::format("purged {} ({})\n", name(e), e.subject);
    }
  }
  if (options.json)
    out << nlohmann::ordered_json({{"purged", std::move(purged)}, {"failed", std::move(failed)}})
               .dump()
        << "\n";
  return finish(err, "purge", failures);
}

}  // namespace natsfleet::deadletters
