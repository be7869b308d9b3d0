// Whether a partition's reader is served. Its consumer can answer lookups and send heartbeats yet
// deliver nothing (its server's copy of the stream fell behind), or answer nothing for as long as
// its only server is down: heartbeats and lookups cannot tell. The stream's leader can: once the
// reader, with room in its lanes, has read nothing for `period`, it asks the leader for the
// partition's next message past what it read; a message found there and still unread a period
// later means the consumer does not serve, and the reader rewinds to a new one.
//
//   if (watch.look_due(now, lanes.read_to(), room) && watch.unserved(next_seq_at_leader)) rewind();
#pragma once

#include <chrono>
#include <cstdint>

namespace natsfleet::fleet {

class ReaderWatch {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ReaderWatch(std::chrono::milliseconds period) : period_(period) {}

  // Each tick. `read_to`: the highest stream sequence read; `room`: the reader asks for more (its
  // lanes are not full). True when the reader should ask the stream's leader now; any progress, or
  // lanes full, starts the wait again.
  bool look_due(Clock::time_point now, uint64_t read_to, bool room);
  // What the look found: the stream sequence of the partition's first message past read_to (0:
  // none). True when the consumer does not serve: the message found by the last look is unread.
  bool unserved(uint64_t found);
  // The message waited for (0: none).
  uint64_t waiting() const { return waiting_; }

 private:
  std::chrono::milliseconds period_;
  bool started_ = false;
  uint64_t read_to_ = 0;
  uint64_t waiting_ = 0;
  Clock::time_point next_look_{};
};

}  // namespace natsfleet::fleet
