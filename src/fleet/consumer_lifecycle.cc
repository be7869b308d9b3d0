#include "fleet/consumer_lifecycle.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/log_event.h"
#include "fleet/consumer_shape.h"

namespace natsfleet::fleet {

using std::chrono::milliseconds;

ConsumerLifecycle::ConsumerLifecycle(const WorkSpec& spec, Options options, nats::ConsumerApi& api,
                                     std::shared_ptr<spdlog::logger> log)
    : spec_(spec), options_(std::move(options)), api_(api), log_(std::move(log)) {
  if (options_.scope == Scope::per_replica) consumer_ = options_.replica_consumer;
}

void ConsumerLifecycle::log_once(const std::string& text) {
  if (logged_.insert(text).second)
    base::log_event(*log_, spdlog::level::info, {{kind(), spec_.name}, {"event", "consumer"}}, "{}",
                    text);
}

Result<nats::ConsumerInfo> ConsumerLifecycle::bind(const std::string& stream, uint64_t last_handled,
                                                   const Wait& wait, const AskPeers& ask_peers) {
  uint64_t last_seq = 0;
  if (auto info = api_.stream_info(stream)) {
    stream_created_ = info->created;
    last_seq = info->last_seq;
  }
  auto info = options_.scope == Scope::shared ? reconcile(stream, last_seq, wait, ask_peers)
                                              : ensure_replica_consumer(stream, last_handled);
  if (!info) return info;
  stream_ = stream;
  consumer_ = info->name;
  ack_floor_ = info->ack_floor_stream_seq;
  consumer_start_ = delivers_from(info->config);
  bound_before_ = true;
  return info;
}

Result<nats::ConsumerInfo> ConsumerLifecycle::create_or_read(const std::string& stream,
                                                             const nats::ConsumerConfig& config,
                                                             bool* created) {
  auto made = api_.create_consumer(stream, config);
  *created = bool(made);
  if (made && config.filter_subjects.size() > 1 && made->config.filter_subjects.empty()) {
    // A server before 2.10 ignores filter_subjects: the consumer it made filters nothing.
    (void)api_.delete_consumer(stream, config.consumer_name());
    return Result<nats::ConsumerInfo>(
        Errc::invalid_argument,
        "the broker ignored the consumer's filter_subjects and made one that filters every "
        "subject (deleted again): several filter subjects need nats-server 2.10 or newer");
  }
  if (made) return made;
  // Another replica created it a moment earlier (perhaps starting elsewhere), or the create was
  // applied and its answer lost: use what the broker holds, and say where it starts.
  auto existing = api_.consumer_info(stream, config.consumer_name());
  if (!existing) return made.error();
  base::log_event(
      *log_, spdlog::level::info, {{kind(), spec_.name}, {"event", "consumer-adopted"}},
      "{} {}: creating consumer {} on stream {} failed ({}); using the one the broker holds, "
      "which delivers from {} (ack floor {})",
      kind(), spec_.name, config.consumer_name(), stream, made.error().describe(),
      delivers_from(existing->config), existing->ack_floor_stream_seq);
  return existing;
}

Result<nats::ConsumerInfo> ConsumerLifecycle::reconcile(const std::string& stream,
                                                        uint64_t stream_last_seq, const Wait& wait,
                                                        const AskPeers& ask_peers) {
  auto existing = api_.consumer_info(stream, spec_.name);
  if (!existing && !existing.error().is_consumer_not_found()) return existing.error();
  if (!existing) {
    // A finished migration retired the original: its successor carries the work.
    const auto successor = successor_name(spec_.name, stream, filter_subjects(spec_), spec_.shape);
    if (auto moved = api_.consumer_info(stream, successor)) return adopt(stream, std::move(*moved));
    // Deleted a moment ago, perhaps: the replicas that were bound recreate it after their ack
    // floor. This one knows no floor; created first, from the start, it would win the race and
    // every message the fleet handled would be handled again.
    const bool may_replay = wait && options_.first_create_wait.count() > 0 && !bound_before_ &&
                            spec_.start == StartAt::all && stream_last_seq > 0;
    // No live replica of this work listens: nobody knew the consumer to recreate it.
    if (may_replay && ask_peers && ask_peers(stream) == Peers::nobody) {
      base::log_event(*log_, spdlog::level::debug,
                      {{kind(), spec_.name}, {"event", "consumer-first"}},
                      "work {}: consumer {} is not on stream {} and no live replica of the work "
                      "knew it: creating it as the spec says",
                      spec_.name, spec_.name, stream);
    } else if (may_replay) {
      base::log_event(
          *log_, spdlog::level::info, {{kind(), spec_.name}, {"event", "consumer-waiting"}},
          "work {}: consumer {} is not on stream {}, which holds messages; waiting {} ms for a "
          "replica that knew it to recreate it after its ack floor before creating it from the "
          "stream's start",
          spec_.name, spec_.name, stream, options_.first_create_wait.count());
      if (!wait(options_.first_create_wait))
        return Result<nats::ConsumerInfo>(Errc::shutting_down, "stopping");
      return reconcile(stream, stream_last_seq, {}, {});
    }
    // What was handled already, as far as this replica knows it: a consumer made from
    // spec.start would deliver it again.
    const uint64_t floor = bound_before_ ? ack_floor_ : 0;
    bool created = false;
    auto info = create_or_read(stream,
                               floor > 0 ? config_starting_at(spec_, floor + 1, spec_.name)
                                         : desired_consumer_config(spec_),
                               &created);
    if (!info) return info;
    if (created && floor > 0)
      base::log_event(
          *log_, spdlog::level::warn, {{kind(), spec_.name}, {"event", "consumer-created"}},
          "work {}: consumer {} was missing on stream {}; created it from stream sequence {}, "
          "after what this replica and its live peers handled",
          spec_.name, spec_.name, stream, floor + 1);
    else if (created)
      log_once(fmt::format("work {}: created shared {} consumer {} on stream {} (subject {})",
                           spec_.name, spec_.shape == WorkShape::pull ? "pull" : "push-queue",
                           spec_.name, stream, describe_subjects(filter_subjects(spec_))));
    return adopt(stream, std::move(*info));
  }
  ShapeCheck shape = check_shape(spec_, existing->config);
  if (!shape.compatible) return migrate(stream, *existing, shape.problem);
  return adopt(stream, std::move(*existing));
}

Result<nats::ConsumerInfo> ConsumerLifecycle::adopt(const std::string& stream,
                                                    nats::ConsumerInfo info) {
  ShapeCheck shape = check_shape(spec_, info.config);
  if (!shape.compatible)
    return Result<nats::ConsumerInfo>(
        Errc::invalid_argument, "consumer " + info.name + " on stream " + stream + " " +
                                    shape.problem + "; delete it, and natsfleet creates it anew");
  if (!shape.needs_update) return info;
  auto updated = api_.update_consumer(stream, shape.updated);
  if (!updated) return updated.error();
  log_once(fmt::format("work {}: updated consumer {} on stream {} in place ({})", spec_.name,
                       info.name, stream, shape.changes));
  return updated;
}

Result<nats::ConsumerInfo> ConsumerLifecycle::migrate(const std::string& stream,
                                                      const nats::ConsumerInfo& old,
                                                      const std::string& problem) {
  const auto successor = successor_name(spec_.name, stream, filter_subjects(spec_), spec_.shape);
  // Everything up to the old ack floor was handled; after it may be pending. Starting there
  // loses nothing (messages acked out of order above the floor may be handled again).
  const uint64_t start = old.ack_floor_stream_seq + 1;
  bool created = false;
  auto info = create_or_read(stream, config_starting_at(spec_, start, successor), &created);
  if (!info) return info;
  predecessor_ = old.name;
  predecessor_unbound_since_ = {};
  if (created)
    log_once(fmt::format(
        "consumer {} on stream {} {}; work moves to successor {}, starting at stream sequence "
        "{}; {} is deleted once nobody has been bound to it for {}s",
        old.name, stream, problem, successor, start, old.name,
        std::chrono::duration_cast<std::chrono::seconds>(options_.retire_grace).count()));
  else
    log_once(fmt::format(
        "consumer {} on stream {} {}; work continues on its successor {} (already created), "
        "starting at stream sequence {}",
        old.name, stream, problem, successor, info->config.opt_start_seq));
  return adopt(stream, std::move(*info));
}

uint64_t ConsumerLifecycle::resume_floor(uint64_t last_handled) const {
  // A replica's own consumer resumes after what this replica handled; a shared one after the
  // last ack floor read from the broker (other replicas' work in between is not known here).
  if (options_.scope == Scope::per_replica) return std::max(ack_floor_, last_handled);
  return ack_floor_;
}

Result<nats::ConsumerInfo> ConsumerLifecycle::ensure_replica_consumer(const std::string& stream,
                                                                      uint64_t last_handled) {
  if (auto mine = api_.consumer_info(stream, consumer_)) return mine;
  const uint64_t floor = resume_floor(last_handled);
  bool created = false;
  auto info = create_or_read(
      stream,
      replica_consumer_config(spec_, consumer_, floor == 0 ? 0 : floor + 1,
                              options_.broadcast_inactive, options_.last_per_subject),
      &created);
  if (info && created)
    log_once(fmt::format("broadcast {}: this replica's consumer {} on stream {} delivers {}",
                         spec_.name, consumer_, stream,
                         floor > 0 ? "after stream sequence " + std::to_string(floor)
                         : options_.last_per_subject
                             ? std::string("the last message of each subject, then new ones")
                             : std::string("new messages")));
  return info;
}

void ConsumerLifecycle::saw_ack_floor(uint64_t floor) { ack_floor_ = std::max(ack_floor_, floor); }

bool ConsumerLifecycle::saw_consumer(const nats::ConsumerInfo& info) {
  const uint64_t floor_before = ack_floor_;
  saw_ack_floor(info.ack_floor_stream_seq);
  // Made anew since this replica last looked (by a peer's recovery, or by the broker itself):
  // where it starts decides what the fleet handles again, so a new start is said once. (Not
  // its creation time: each server of a cluster reports the time it made its own copy.)
  std::string start = delivers_from(info.config);
  if (start == consumer_start_) return false;
  const bool anew = !consumer_start_.empty();
  if (anew)
    base::log_event(
        *log_, spdlog::level::warn, {{kind(), spec_.name}, {"event", "consumer-made-anew"}},
        "{} {}: consumer {} on stream {} was made anew by another replica or the broker: it "
        "delivers from {} (it delivered from {}), its ack floor {}, the last one seen here {}",
        kind(), spec_.name, consumer_, stream_, start, consumer_start_, info.ack_floor_stream_seq,
        floor_before);
  consumer_start_ = std::move(start);
  return anew;
}

ConsumerLifecycle::Found ConsumerLifecycle::look_up() {
  auto info = api_.consumer_info(stream_, consumer_);
  if (info) {
    saw_consumer(*info);
    return {};
  }
  const Lookup lookup = info.error().is_consumer_not_found() ? Lookup::consumer_missing
                        : info.error().is_stream_not_found() ? Lookup::stream_missing
                                                             : Lookup::unreachable;
  return {lookup, info.error()};
}

ConsumerLifecycle::Found ConsumerLifecycle::confirm(const Wait& wait) {
  Found first = look_up();
  if (first.lookup == Lookup::present || first.lookup == Lookup::unreachable) return first;
  // A new leader may briefly not know the consumer; a recovering cluster may not know the
  // stream for a while. Only a verdict that holds across the whole window counts.
  const int lookups = std::max(options_.missing_lookups, 1);
  const auto spacing = options_.missing_window / std::max(lookups - 1, 1);
  Found verdict = first;
  for (int i = 1; i < lookups; ++i) {
    if (!wait(spacing)) break;
    Found next = look_up();
    if (next.lookup == Lookup::present || next.lookup == Lookup::unreachable) return next;
    if (next.lookup == Lookup::consumer_missing || verdict.lookup != Lookup::consumer_missing)
      verdict = std::move(next);
  }
  return verdict;
}

Result<nats::ConsumerInfo> ConsumerLifecycle::recreate(uint64_t last_handled) {
  auto stream = api_.stream_info(stream_);
  if (!stream) return stream.error();
  const uint64_t floor = resume_floor(last_handled);
  std::string from;
  uint64_t start = 0;  // 0: as the spec says (start of the stream, or new messages)
  // A stream created anew (a wiped store, or deleted and made again) holds none of what the
  // floor counted: all of it is new, however far it has been refilled since.
  const std::string& born = stream->created;
  const bool known = !stream_created_.empty() && !born.empty();
  const bool recreated = known && born != stream_created_;
  if (!born.empty()) stream_created_ = born;
  if (floor > 0 && !recreated && stream->last_seq >= floor) {
    start = floor + 1;
    from = "stream sequence " + std::to_string(start);
  } else if (floor > 0 && known && !recreated) {
    // The same stream, holding less than the floor counted: a failover lost its tail (or a
    // lagging leader answered). What it holds up to its last sequence was handled; what it
    // stores from now on takes the sequences after, some of them at or below the old floor.
    start = stream->last_seq + 1;
    from = "stream sequence " + std::to_string(start) + " (the stream holds up to " +
           std::to_string(stream->last_seq) + ", below ack floor " + std::to_string(floor) + ")";
  } else if (floor > 0) {
    start = 1;
    from = "the stream's start (the stream was created anew since ack floor " +
           std::to_string(floor) + ")";
  } else {
    from = spec_.start == StartAt::all && options_.scope == Scope::shared ? "the stream's start"
                                                                          : "new messages";
  }
  nats::ConsumerConfig config;
  if (options_.scope == Scope::per_replica)
    config = replica_consumer_config(spec_, consumer_, start, options_.broadcast_inactive,
                                     options_.last_per_subject);
  else
    config = start > 0 ? config_starting_at(spec_, start, consumer_)
                       : desired_consumer_config(spec_, consumer_);
  bool created = false;
  auto info = create_or_read(stream_, config, &created);
  if (info && created)
    base::log_event(*log_, spdlog::level::warn,
                    {{kind(), spec_.name}, {"event", "consumer-recreated"}},
                    "{} {}: consumer {} was missing on stream {}; recreated it from {}", kind(),
                    spec_.name, consumer_, stream_, from);
  if (info) consumer_start_ = delivers_from(info->config);
  return info;
}

Result<void> ConsumerLifecycle::tend_predecessor(Clock::time_point now) {
  if (predecessor_.empty()) return {};
  auto info = api_.consumer_info(stream_, predecessor_);
  if (!info) {
    if (info.error().is_consumer_not_found()) predecessor_.clear();  // retired (by any replica)
    return {};
  }
  const bool bound = info->is_pull() ? info->num_waiting > 0 : info->push_bound;
  if (bound) {
    // An older replica still consumes it: its messages are handled twice meanwhile, never lost.
    if (predecessor_unbound_since_ != Clock::time_point{} || logged_.count(predecessor_) == 0) {
      logged_.insert(predecessor_);
      base::log_event(
          *log_, spdlog::level::info, {{kind(), spec_.name}, {"event", "predecessor-bound"}},
          "work {}: consumer {} on stream {} is still bound (an older replica consumes it); "
          "it stays until nobody is bound to it",
          spec_.name, predecessor_, stream_);
    }
    predecessor_unbound_since_ = {};
    return {};
  }
  if (predecessor_unbound_since_ == Clock::time_point{}) {
    predecessor_unbound_since_ = now;
    return {};
  }
  if (now - predecessor_unbound_since_ < options_.retire_grace) return {};
  auto deleted = api_.delete_consumer(stream_, predecessor_);
  if (!deleted && !deleted.error().is_consumer_not_found())
    return Error{deleted.error().code,
                 "cannot retire consumer " + predecessor_ + ": " + deleted.error().describe()};
  if (deleted)
    base::log_event(
        *log_, spdlog::level::info, {{kind(), spec_.name}, {"event", "predecessor-retired"}},
        "work {}: retired consumer {} on stream {}: nobody was bound to it for {} ms; its work "
        "continues on {}",
        spec_.name, predecessor_, stream_,
        std::chrono::duration_cast<milliseconds>(now - predecessor_unbound_since_).count(),
        consumer_);
  predecessor_.clear();
  return {};
}

}  // namespace natsfleet::fleet
