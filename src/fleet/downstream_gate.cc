#include "fleet/downstream_gate.h"

#include <algorithm>

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;

// A lone suspect that fails this often, with no other message to compare it with, is taken for
// an outage.
constexpr int kLoneFailuresForOutage = 3;
constexpr milliseconds kMaxRetryAfter{5 * 60 * 1000};
// Messages found to fail by themselves that the gate remembers.
constexpr size_t kConvictedMemory = 4096;

milliseconds honoured(milliseconds backoff, milliseconds retry_after) {
  return std::max(backoff, std::min(retry_after, kMaxRetryAfter));
}

}  // namespace

DownstreamGate::DownstreamGate(Options options)
    : options_(std::move(options)),
      backoff_(options_.retry_min, options_.retry_max, options_.jitter) {}

size_t DownstreamGate::held() const {
  std::lock_guard lock(mu_);
  return held_.size() + (probe_out_ ? 1 : 0);
}

std::string DownstreamGate::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

void DownstreamGate::publish_flags() {
  down_.store(state_ != State::up, std::memory_order_release);
  quiet_.store(state_ == State::up && held_.empty() && failing_.empty() && !probe_out_,
               std::memory_order_release);
}

std::optional<nats::InboundMessage> DownstreamGate::hold(nats::InboundMessage&& message,
                                                         uint64_t id, TimePoint now) {
  std::lock_guard lock(mu_);
  if (state_ == State::up) return std::move(message);
  held_.push_back(Held{std::move(message), id, 0, false, {}, now});
  publish_flags();
  return std::nullopt;
}

DownstreamGate::Outcome DownstreamGate::failed(nats::InboundMessage&& message, uint64_t id,
                                               bool probe, std::string error,
                                               milliseconds retry_after, TimePoint now) {
  Outcome out;
  std::lock_guard lock(mu_);
  last_error_ = std::move(error);
  last_failure_ = std::max(last_failure_, now);
  Held h{std::move(message), id, 0, false, {}, now};
  if (probe && probe_out_) {
    h.failures = probe_.failures;
    h.try_alone = probe_.try_alone;
    probe_out_ = false;
  }
  ++h.failures;
  if (std::find(failing_.begin(), failing_.end(), id) == failing_.end()) failing_.push_back(id);

  switch (state_) {
    case State::up:
      failed_while_up(std::move(h), retry_after, now, out);
      break;
    case State::down:
      failed_while_down(std::move(h), probe, retry_after, now, out);
      break;
    case State::verifying:
      failed_while_verifying(std::move(h), probe, retry_after, now, out);
      break;
  }
  publish_flags();
  return out;
}

void DownstreamGate::failed_while_up(Held&& h, milliseconds retry_after, TimePoint now,
                                     Outcome& out) {
  if (failing_.size() == 1 && convicted(h.id)) {
    // It failed by itself before, and nothing else fails now: the same verdict again.
    failing_.clear();
    out.reject.push_back(std::move(h.message));
    return;
  }
  held_.push_back(std::move(h));
  if (failing_.size() >= 2 || held_.back().failures >= kLoneFailuresForOutage) {
    go_down(now, retry_after, out);
    return;
  }
  // A suspect: tried again alone after a while, unless another message settles it first.
  base::Backoff wait(options_.retry_min, options_.retry_max, options_.jitter);
  milliseconds delay = wait.next();
  for (int i = 1; i < held_.back().failures; ++i) delay = wait.next();
  held_.back().retry_at = now + honoured(delay, retry_after);
}

void DownstreamGate::failed_while_down(Held&& h, bool probe, milliseconds retry_after,
                                       TimePoint now, Outcome& out) {
  if (probe && convicted(h.id)) {
    // Found out before, and failing again: no outage evidence beats that history.
    out.reject.push_back(std::move(h.message));
    next_probe_ = now;
    if (held_.empty()) finish_verifying(out);  // nothing left to hold for
    return;
  }
  // A probe that failed, or a message that was in flight when the outage began (it may be
  // the one that brought it): both are tried alone before the others are released.
  h.try_alone = true;
  if (probe) next_probe_ = now + honoured(backoff_.next(), retry_after);
  held_.push_back(std::move(h));
}

void DownstreamGate::failed_while_verifying(Held&& h, bool probe, milliseconds retry_after,
                                            TimePoint now, Outcome& out) {
  if (!probe) {
    // Fresh messages are held untried while verifying, so this one was in flight when the
    // outage began and its failure is reported late (after a success that moved the gate
    // here): it may be the culprit, so it is tried alone like the others.
    h.try_alone = true;
    held_.push_back(std::move(h));
    return;
  }
  if (last_verify_failed_) {
    // Two in a row right after a success: the downstream went away again.
    h.try_alone = true;
    held_.push_back(std::move(h));
    go_down(now, retry_after, out);
    out.change = Change::none;  // down() never stopped being true
    return;
  }
  // The downstream worked a moment ago and fails for this one: its own problem.
  last_verify_failed_ = true;
  convict(h.id);
  out.reject.push_back(std::move(h.message));
  if (!verify_left()) finish_verifying(out);
}

DownstreamGate::Outcome DownstreamGate::succeeded(bool probe, TimePoint tried, TimePoint now) {
  Outcome out;
  std::lock_guard lock(mu_);
  if (probe) {
    probe_out_ = false;
  } else if (tried < last_failure_) {
    return out;  // in flight with the failures: no evidence either way
  }
  failing_.clear();
  switch (state_) {
    case State::up:
      // Held suspects failed while another message went through: each failed by itself.
      for (auto& h : held_) {
        convict(h.id);
        out.reject.push_back(std::move(h.message));
      }
      held_.clear();
      break;
    case State::down:
      backoff_.reset();
      state_ = State::verifying;
      last_verify_failed_ = false;
      next_probe_ = now;
      if (!verify_left() && !probe_out_) finish_verifying(out);
      break;
    case State::verifying:
      last_verify_failed_ = false;
      if (!verify_left() && !probe_out_) finish_verifying(out);
      break;
  }
  publish_flags();
  return out;
}

DownstreamGate::Outcome DownstreamGate::dropped(uint64_t id, TimePoint now) {
  Outcome out;
  std::lock_guard lock(mu_);
  probe_out_ = false;
  failing_.erase(std::remove(failing_.begin(), failing_.end(), id), failing_.end());
  next_probe_ = now;
  if (state_ == State::verifying && !verify_left()) finish_verifying(out);
  // Down with nothing left to probe with: the intake would stay held back for ever. Fresh
  // messages are tried again; two failing bring the outage back.
  if (state_ == State::down && held_.empty()) {
    state_ = State::up;
    out.change = Change::went_up;
    out.emptied = true;
    failing_.clear();
  }
  publish_flags();
  return out;
}

void DownstreamGate::convict(uint64_t id) {
  if (convicted(id)) return;
  convicted_.push_back(id);
  if (convicted_.size() > kConvictedMemory) convicted_.pop_front();
}

bool DownstreamGate::convicted(uint64_t id) const {
  return std::find(convicted_.rbegin(), convicted_.rend(), id) != convicted_.rend();
}

bool DownstreamGate::verify_left() const {
  return std::any_of(held_.begin(), held_.end(), [](const Held& h) { return h.try_alone; });
}

void DownstreamGate::go_down(TimePoint now, milliseconds retry_after, Outcome& out) {
  // The messages that failed together may hide the one that brought the downstream down.
  for (auto& h : held_)
    if (std::find(failing_.begin(), failing_.end(), h.id) != failing_.end()) h.try_alone = true;
  state_ = State::down;
  out.change = Change::went_down;
  backoff_.reset();
  next_probe_ = now + honoured(backoff_.next(), retry_after);
}

void DownstreamGate::finish_verifying(Outcome& out) {
  state_ = State::up;
  out.change = Change::went_up;
  failing_.clear();
  for (auto& h : held_) out.retry.push_back(std::move(h.message));
  held_.clear();
}

std::optional<nats::InboundMessage> DownstreamGate::next_probe(TimePoint now) {
  std::lock_guard lock(mu_);
  if (probe_out_ || held_.empty()) return std::nullopt;
  auto pick = held_.end();
  switch (state_) {
    case State::up:
      pick = std::find_if(held_.begin(), held_.end(),
                          [&](const Held& h) { return h.retry_at <= now; });
      break;
    case State::down:
      if (now >= next_probe_) pick = held_.begin();
      break;
    case State::verifying:
      pick = std::find_if(held_.begin(), held_.end(), [](const Held& h) { return h.try_alone; });
      break;
  }
  if (pick == held_.end()) return std::nullopt;
  probe_out_ = true;
  probe_ = Held{{}, pick->id, pick->failures, pick->try_alone, {}, now};
  nats::InboundMessage message = std::move(pick->message);
  held_.erase(pick);
  publish_flags();
  return message;
}

std::vector<std::string> DownstreamGate::in_progress_due(TimePoint now) {
  std::vector<std::string> replies;
  std::lock_guard lock(mu_);
  for (auto& h : held_) {
    if (now - h.last_progress < options_.in_progress_every) continue;
    h.last_progress = now;
    replies.push_back(h.message.reply);
  }
  return replies;
}

std::vector<nats::InboundMessage> DownstreamGate::take_all() {
  std::lock_guard lock(mu_);
  return take_all_locked();
}

std::vector<nats::InboundMessage> DownstreamGate::hand_over() {
  std::lock_guard lock(mu_);
  if (probe_out_) return {};
  return take_all_locked();
}

std::vector<nats::InboundMessage> DownstreamGate::take_all_locked() {
  std::vector<nats::InboundMessage> all;
  for (auto& h : held_) all.push_back(std::move(h.message));
  held_.clear();
  failing_.clear();
  state_ = State::up;
  publish_flags();
  return all;
}

}  // namespace natsfleet::fleet
