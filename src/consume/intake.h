// How messages of a work consumer reach this replica: pulled (PullEngine) or pushed to a deliver
// group (QueueIntake). The supervisor drives either through this one interface.
//
// Thread use: deliveries arrive on nats.c's threads (a push intake) or the thread that reads
// (read(), drain()); message_done() from handler threads; the rest from the owner's supervisor
// thread.
#pragma once

#include <chrono>
#include <cstdint>

#include "natsfleet/error.h"

namespace natsfleet::consume {

class Intake {
 public:
  virtual ~Intake() = default;
  // Subscribes (and, for pulls, asks for the first messages).
  virtual Result<void> start() = 0;
  // No more deliveries once it returns.
  virtual void stop() = 0;
  // Asks for nothing more; what is already on its way is still delivered.
  virtual void stop_pulling() = 0;
  // Messages asked for and not yet delivered.
  virtual int64_t outstanding() const = 0;
  virtual void message_done() = 0;
  // A message that left through message_done() is in hand again (a deferred verdict's retry).
  virtual void message_back() {}
  // After anything that may have dropped waiting requests (a reconnect, a new leader).
  virtual void restart_pulls() = 0;
  // Periodic upkeep from the supervisor.
  virtual void tick() = 0;
  // An intake its owner reads (a pull engine with Options::owner_reads): delivers what reached
  // it, waiting up to `wait` for a first message; false when it could not read now (see
  // PullEngine::read). Others deliver on their own and return false.
  virtual bool read(std::chrono::milliseconds /*wait*/) { return false; }
  // Delivers everything that waits now, without waiting (the supervisor's, while the handler
  // threads are busy and so not reading).
  virtual void drain() {}
  // The broker has been silent past its promised heartbeats. An intake without heartbeats
  // never says so: its owner polls the consumer's info instead.
  virtual bool heartbeat_missed() const = 0;
  // How many messages may be requested or buffered at once.
  virtual void set_window(int messages) = 0;
  // While the downstream is down: take in hardly anything more (a pull keeps room for one
  // spare message to probe with; a push leaves its deliver group). false resumes as before.
  virtual void hold_back(bool on) = 0;
  // Ordered work, while this replica's downstream fails: ask for nothing, and let go of what was
  // asked for, so the broker hands the consumer's next messages to other replicas; what is in
  // hand stays. false takes in again. A push intake (ordered work pulls) holds back instead.
  virtual void step_back(bool on) { hold_back(on); }
  // Gaps (this process paused, its link cut) after which deliveries were skipped as stale, and
  // how many were skipped (see PullEngine); an intake that cannot tell reports none.
  virtual uint64_t gaps() const { return 0; }
  virtual uint64_t stale_dropped() const { return 0; }
  // When the consumer last showed it serves this intake: a message, or (pulled) a heartbeat or
  // a request's end; never a pull refused for want of a responder. The epoch until then.
  virtual std::chrono::steady_clock::time_point last_served() const = 0;
};

}  // namespace natsfleet::consume
