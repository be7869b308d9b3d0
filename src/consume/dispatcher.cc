#include "consume/dispatcher.h"

namespace natsfleet::consume {

Dispatcher::Dispatcher(int concurrency, Process process) : state_(std::make_shared<State>()) {
  state_->process = std::move(process);
  for (int i = 0; i < std::max(concurrency, 1); ++i) threads_.emplace_back(worker, state_);
}

Dispatcher::~Dispatcher() {
  if (!stopped_) stop(std::chrono::milliseconds(0), nullptr);
}

std::optional<nats::InboundMessage> Dispatcher::submit(nats::InboundMessage&& msg) {
  bool wake;
  {
    std::lock_guard lock(state_->mu);
    if (state_->stopping) return std::move(msg);
    state_->queue.push_back(std::move(msg));
    wake = state_->waiting > 0;
  }
  if (wake) state_->work_ready.notify_one();
  return std::nullopt;
}

size_t Dispatcher::queued() const {
  std::lock_guard lock(state_->mu);
  return state_->queue.size();
}

void Dispatcher::worker(std::shared_ptr<State> state) {
  std::unique_lock lock(state->mu);
  for (;;) {
    ++state->waiting;
    state->work_ready.wait(lock, [&] { return state->stopping || !state->queue.empty(); });
    --state->waiting;
    if (state->stopping) break;
    nats::InboundMessage msg = std::move(state->queue.front());
    state->queue.pop_front();
    ++state->running;
    lock.unlock();
    state->process(std::move(msg));  // process() catches handler exceptions itself
    lock.lock();
    --state->running;
    state->idle.notify_all();
  }
}

bool Dispatcher::stop(std::chrono::milliseconds deadline, const Reject& reject) {
  std::deque<nats::InboundMessage> leftover;
  bool finished;
  {
    std::unique_lock lock(state_->mu);
    state_->stopping = true;
    leftover.swap(state_->queue);
    state_->work_ready.notify_all();
    finished = state_->idle.wait_for(lock, deadline, [&] { return state_->running == 0; });
  }
  if (reject)
    for (auto& m : leftover) reject(std::move(m));
  for (auto& t : threads_) {
    if (finished)
      t.join();
    else
      t.detach();  // a handler overran the deadline; State outlives us through shared_ptr
  }
  threads_.clear();
  stopped_ = true;
  return finished;
}

}  // namespace natsfleet::consume
