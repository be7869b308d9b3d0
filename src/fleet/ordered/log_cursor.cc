#include "fleet/ordered/log_cursor.h"

namespace natsfleet::fleet {

LogCursor::Step LogCursor::follow(uint64_t consumer_seq, uint64_t pending, uint64_t stream_seq,
                                  uint64_t read_to) {
  if (hole()) return Step::hole;
  if (consumer_seq != 0 && consumer_seq <= last_consumer_seq_) return Step::repeat;
  if (consumer_seq != last_consumer_seq_ + 1) {
    hole_why_ = "delivery " + std::to_string(consumer_seq) + " came after " +
                std::to_string(last_consumer_seq_);
    return Step::hole;
  }
  if (last_consumer_seq_ != 0 && pending + 1 < last_pending_ && stream_seq > read_to) {
    hole_why_ =
        "pending fell from " + std::to_string(last_pending_) + " to " + std::to_string(pending);
    return Step::hole;
  }
  last_consumer_seq_ = consumer_seq;
  last_pending_ = pending;
  return Step::take;
}

}  // namespace natsfleet::fleet
