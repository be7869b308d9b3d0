// The log rule over one consumer's deliveries of a partition: a delivery is taken only when it
// carries the next consumer sequence and the consumer's pending count fell by at most one since
// the last. A consumer sequence taken already is a redelivery of it (a broker that restarted or
// moved the consumer's leader sends what was not acked again): a repeat. Anything else means a
// delivery went missing (a pause, a reconnect, a broker that skipped one): a hole, after which
// nothing is taken until the reader starts a new consumer.
//
//   LogCursor cursor;
//   if (cursor.follow(d.consumer_seq, d.pending, d.stream_seq, lanes.read_to()) != Step::take) ...
//   if (cursor.hole()) rewind(cursor.hole_why());
#pragma once

#include <cstdint>
#include <string>

namespace natsfleet::fleet {

class LogCursor {
 public:
  enum class Step { take, repeat, hole };
  // take: the delivery follows the last one taken (it becomes the last). repeat: a delivery taken
  // before. hole: nothing is taken from now on until reset(). `read_to` is the highest stream
  // sequence read; a delivery at or below it was read already, so pending says nothing new.
  Step follow(uint64_t consumer_seq, uint64_t pending, uint64_t stream_seq, uint64_t read_to);
  bool hole() const { return !hole_why_.empty(); }
  // What showed the hole, for logs and /status.
  const std::string& hole_why() const { return hole_why_; }
  // A new consumer: its first delivery carries consumer sequence 1.
  void reset() { *this = LogCursor(); }
  // An adopted consumer: `consumer_seq` delivered, `pending` left after it.
  void resume(uint64_t consumer_seq, uint64_t pending) {
    *this = LogCursor();
    last_consumer_seq_ = consumer_seq;
    last_pending_ = pending;
  }

 private:
  uint64_t last_consumer_seq_ = 0;
  uint64_t last_pending_ = 0;
  std::string hole_why_;
};

}  // namespace natsfleet::fleet
