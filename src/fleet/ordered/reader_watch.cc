#include "fleet/ordered/reader_watch.h"

namespace natsfleet::fleet {

bool ReaderWatch::look_due(Clock::time_point now, uint64_t read_to, bool room) {
  if (!started_ || read_to != read_to_ || !room) {
    started_ = true;
    read_to_ = read_to;
    waiting_ = 0;
    next_look_ = now + period_;
    return false;
  }
  if (now < next_look_) return false;
  next_look_ = now + period_;
  return true;
}

bool ReaderWatch::unserved(uint64_t found) {
  if (found == 0) {
    waiting_ = 0;
    return false;
  }
  if (waiting_ != 0) return true;  // nothing was read since: look_due() would have started again
  waiting_ = found;
  return false;
}

}  // namespace natsfleet::fleet
