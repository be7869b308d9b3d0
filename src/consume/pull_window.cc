#include "consume/pull_window.h"

#include <algorithm>

namespace natsfleet::consume {

PullWindow::PullWindow(Options options)
    : options_(options), window_(std::max<int64_t>(options.window, 1)), normal_window_(window_) {}

int64_t PullWindow::next_pull(Clock::time_point now) {
  if (!pull_due()) return 0;
  const int64_t want = window_ - (requested_ + in_hand_);
  if (requested_ == 0) last_heard_ = now;  // heartbeats are owed from now on
  // No earlier request can still deliver: this one is the oldest.
  if (requested_ == 0 && now >= forgotten_live_) oldest_live_ = now;
  requested_ += want;
  last_pull_ = now;
  ++pulls_;
  return want;
}

void PullWindow::delivered(Clock::time_point now) {
  last_heard_ = now;
  if (requested_ > 0) --requested_;
  ++in_hand_;
}

void PullWindow::done() {
  if (in_hand_ > 0) --in_hand_;
}

void PullWindow::released(uint64_t messages) {
  requested_ -= std::min<int64_t>(requested_, static_cast<int64_t>(messages));
}

void PullWindow::unsent(int64_t messages) {
  requested_ -= std::clamp<int64_t>(messages, 0, requested_);
  if (pulls_ > 0) --pulls_;
}

void PullWindow::heard(Clock::time_point now) { last_heard_ = now; }

void PullWindow::forget_requests(Clock::time_point now) {
  if (requested_ > 0)
    forgotten_live_ = std::max(forgotten_live_, last_pull_ + options_.expires + options_.heartbeat);
  requested_ = 0;
  last_heard_ = now;
}

void PullWindow::new_inbox(Clock::time_point now) {
  forgotten_live_ = {};
  requested_ = 0;
  last_heard_ = now;
}

bool PullWindow::gap(Clock::time_point now) {
  if (options_.gap_after.count() <= 0 || requested_ == 0 || now - last_heard_ < options_.gap_after)
    return false;
  ++gaps_;
  // They may still deliver until the inbox is replaced (see new_inbox()).
  forgotten_live_ = std::max(forgotten_live_, last_pull_ + options_.expires + options_.heartbeat);
  requested_ = 0;
  return true;
}

bool PullWindow::expire(Clock::time_point now) {
  if (requested_ == 0 || now - last_pull_ <= options_.expires + options_.heartbeat) return false;
  requested_ = 0;
  return true;
}

bool PullWindow::heartbeat_missed(Clock::time_point now) const {
  return requested_ > 0 && now - last_heard_ > options_.heartbeat * 2;
}

void PullWindow::set_window(int64_t messages) {
  normal_window_ = std::max<int64_t>(messages, 1);
  if (!held_back_) window_ = normal_window_;
}

void PullWindow::hold_back(bool on) {
  if (held_back_ == on) return;
  held_back_ = on;
  if (on) normal_window_ = window_;
  window_ = on ? std::min<int64_t>(window_, 2) : normal_window_;
}

}  // namespace natsfleet::consume
