#include "consume/dispatcher.h"

#include <algorithm>
#include <string>
#include <system_error>

namespace natsfleet::consume {

Dispatcher::Dispatcher(Options options, Process process)
    : options_(std::move(options)), state_(std::make_shared<State>()) {
  state_->process = std::move(process);
  state_->clock = options_.clock;
  state_->feed = options_.feed;
  state_->feed_wait = options_.feed_wait;
  const int wanted = std::max(options_.concurrency, 1);
  state_->slots.resize(static_cast<size_t>(wanted));
  try {
    for (int i = 0; i < wanted; ++i) threads_.emplace_back(worker, state_, static_cast<size_t>(i));
  } catch (const std::system_error& e) {
    // The threads already running end before the vector holding them goes away (a joinable
    // std::thread destroyed would terminate the process): the caller gets an error, not an abort.
    const size_t started = threads_.size();
    stop(std::chrono::milliseconds(0), nullptr);
    join();
    throw std::system_error(e.code(), "cannot start handler thread " + std::to_string(started + 1) +
                                          " of " + std::to_string(wanted));
  }
}

Dispatcher::~Dispatcher() {
  stop(std::chrono::milliseconds(0), nullptr);
  join();
}

Dispatcher::Submitted Dispatcher::submit(nats::InboundMessage&& msg, Placement placement) {
  Submitted result;
  bool wake;
  const auto now = options_.clock->now();
  // The broker's ack_wait clock for it started when it arrived, or at its last in-progress ack.
  auto touched = std::max(msg.received, msg.kept_alive);
  if (touched == Clock::time_point{}) touched = now;
  {
    std::lock_guard lock(state_->mu);
    if (state_->stopping) {
      result.refused = std::move(msg);
      return result;
    }
    auto& queue = state_->queue;
    std::string key;
    const bool keyed =
        options_.key && (placement == Placement::replace ||
                         (options_.max_queued > 0 && queue.size() >= options_.max_queued));
    if (keyed) key = options_.key(msg);
    constexpr size_t kNone = static_cast<size_t>(-1);
    auto first_where = [&](auto&& pred) {
      for (size_t i = 0; i < queue.size(); ++i)
        if (pred(queue[i])) return i;
      return kNone;
    };
    auto same_key = [&] {
      return first_where(
          [&](const Item& item) { return !item.probe && options_.key(item.msg) == key; });
    };
    if (placement == Placement::replace && !key.empty()) {
      if (const size_t i = same_key(); i != kNone) {
        Item& it = queue[i];
        result.displaced = std::exchange(it.msg, std::move(msg));
        it.arrived = now;
        it.touched = touched;
        return result;  // nobody new to wake: the queue holds as many as before
      }
    }
    if (options_.max_queued > 0 && queue.size() >= options_.max_queued) {
      size_t victim = key.empty() ? kNone : same_key();
      if (victim == kNone) victim = first_where([](const Item& i) { return !i.probe; });
      if (victim != kNone) result.displaced = queue.erase(victim).msg;
    }
    switch (placement) {
      case Placement::front:
        queue.push_front(Item{std::move(msg), false, now, touched});
        break;
      case Placement::probe:
        queue.push_front(Item{std::move(msg), true, now, touched});
        break;
      case Placement::back:
      case Placement::replace:
        queue.push_back(Item{std::move(msg), false, now, touched});
        break;
    }
    wake = state_->waiting > 0;
  }
  if (wake) state_->work_ready.notify_one();
  return result;
}

void Dispatcher::submit_all(std::vector<nats::InboundMessage>& batch) {
  if (batch.empty()) return;
  const auto now = options_.clock->now();
  int wake = 0;
  {
    std::lock_guard lock(state_->mu);
    if (state_->stopping) return;
    for (auto& msg : batch) {
      auto touched = std::max(msg.received, msg.kept_alive);
      if (touched == Clock::time_point{}) touched = now;
      state_->queue.push_back(Item{std::move(msg), false, now, touched});
    }
    wake = std::min(state_->waiting, static_cast<int>(batch.size()));
  }
  batch.clear();
  // As many idle threads as there are messages, not all of them: a woken thread that finds
  // nothing left only goes back to sleep.
  for (int i = 0; i < wake; ++i) state_->work_ready.notify_one();
}

void Dispatcher::hold(bool held) {
  {
    std::lock_guard lock(state_->mu);
    if (state_->held == held) return;
    state_->held = held;
  }
  if (!held) state_->work_ready.notify_all();
}

size_t Dispatcher::queued() const {
  std::lock_guard lock(state_->mu);
  return state_->queue.size();
}

size_t Dispatcher::in_hand() const {
  std::lock_guard lock(state_->mu);
  return state_->queue.size() + static_cast<size_t>(state_->running);
}

Dispatcher::KeepAlive Dispatcher::keep_alive(Clock::time_point now, Clock::duration every,
                                             Clock::duration limit, Clock::duration stale_after) {
  KeepAlive result;
  std::lock_guard lock(state_->mu);
  auto& queue = state_->queue;
  for (size_t i = 0; i < queue.size();) {
    Item& item = queue[i];
    // Stale: not kept alive in time (the process was paused), so the broker has likely handed
    // it on. It is neither kept alive nor given back here: its handler thread skips it.
    if (item.msg.reply.empty() || now - item.touched >= stale_after) {
      ++i;
      continue;
    }
    if (!item.probe && now - item.arrived >= limit) {
      result.expired.push_back(queue.erase(i).msg);
      continue;
    }
    if (now - item.touched >= every) {
      item.touched = now;
      result.due.push_back(item.msg.reply);
    }
    ++i;
  }
  for (auto& slot : state_->slots) {
    if (!slot.active || slot.overran || slot.reply.empty()) continue;
    if (now - slot.started >= limit) {
      slot.overran = true;
      result.overran.push_back(slot.reply);
    } else if (now - slot.touched >= every) {
      slot.touched = now;
      result.due.push_back(slot.reply);
    }
  }
  return result;
}

void Dispatcher::worker(const std::shared_ptr<State>& state, size_t slot_index) {
  std::unique_lock lock(state->mu);
  for (;;) {
    if (state->stopping) break;
    if (state->held) {
      ++state->waiting;
      state->work_ready.wait(lock, [&] { return state->stopping || !state->held; });
      --state->waiting;
      continue;
    }
    if (state->queue.empty()) {
      feed_or_wait(*state, lock);
      continue;
    }
    Item item = state->queue.pop_front();
    ++state->running;
    // Someone idle reads the intake while this thread handles.
    if (state->feed && state->queue.empty() && state->waiting > 0 && !state->reading)
      state->work_ready.notify_one();
    // Its wait so far counts against ack_wait: it stays due when its last ack was.
    auto& slot = state->slots[slot_index];
    slot.active = true;
    slot.overran = false;
    slot.reply = item.msg.reply;
    slot.started = state->clock->now();
    slot.touched = item.touched;
    item.msg.kept_alive = item.touched;
    lock.unlock();
    // process() catches handler exceptions.
    state->process(std::move(item.msg), Turn{item.probe, slot.started});
    lock.lock();
    slot.active = false;
    --state->running;
    state->idle.notify_all();
  }
}

void Dispatcher::feed_or_wait(State& state, std::unique_lock<std::mutex>& lock) {
  auto work_or_stop = [&] { return state.stopping || !state.queue.empty(); };
  if (!state.feed || state.reading) {
    ++state.waiting;
    state.work_ready.wait(lock, [&] { return work_or_stop() || (state.feed && !state.reading); });
    --state.waiting;
    return;
  }
  state.reading = true;
  lock.unlock();
  bool fed = false;
  try {
    fed = state.feed(state.feed_wait);
  } catch (...) {
    // A read that failed (out of memory copying a message) is tried again after a pause.
  }
  lock.lock();
  if (!fed && !work_or_stop()) {
    // Still the reader while it pauses: the others wait for work, not to poll too.
    ++state.waiting;
    state.work_ready.wait_for(lock, state.feed_wait, work_or_stop);
    --state.waiting;
  }
  state.reading = false;
}

bool Dispatcher::stop(std::chrono::milliseconds deadline, const Reject& reject) {
  std::vector<Item> leftover;
  bool finished;
  {
    std::unique_lock lock(state_->mu);
    state_->stopping = true;
    leftover = state_->queue.take_all();
    state_->work_ready.notify_all();
    finished = state_->idle.wait_for(lock, deadline, [&] { return state_->running == 0; });
  }
  if (reject)
    for (auto& item : leftover) reject(std::move(item.msg));
  return finished;
}

bool Dispatcher::await_idle(Clock::time_point until) {
  std::unique_lock lock(state_->mu);
  return state_->idle.wait_until(lock, until, [&] { return state_->running == 0; });
}

void Dispatcher::join() {
  std::lock_guard lock(join_mu_);
  for (auto& t : threads_)
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
}

}  // namespace natsfleet::consume
