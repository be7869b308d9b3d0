#include "consume/pull_status.h"

#include <gtest/gtest.h>

namespace natsfleet::consume {
namespace {

TEST(PullStatus, ClassifiesServerStatuses) {
  EXPECT_EQ(classify_pull_status(100, "Idle Heartbeat", {}).signal, PullSignal::heartbeat);
  EXPECT_EQ(classify_pull_status(404, "No Messages", {}).signal, PullSignal::no_messages);
  EXPECT_EQ(classify_pull_status(408, "Request Timeout", {}).signal, PullSignal::request_expired);
  EXPECT_EQ(classify_pull_status(409, "Consumer Deleted", {}).signal, PullSignal::consumer_deleted);
  EXPECT_EQ(classify_pull_status(409, "Leadership Change", {}).signal,
            PullSignal::leadership_change);
  EXPECT_EQ(classify_pull_status(409, "Exceeded MaxWaiting", {}).signal, PullSignal::max_waiting);
  EXPECT_EQ(classify_pull_status(409, "Consumer is push based", {}).signal,
            PullSignal::push_consumer);
  EXPECT_EQ(classify_pull_status(409, "Batch Completed", {}).signal, PullSignal::request_done);
  EXPECT_EQ(classify_pull_status(409, "Message Size Exceeds MaxBytes", {}).signal,
            PullSignal::request_done);
  EXPECT_EQ(classify_pull_status(400, "Bad Request", {}).signal, PullSignal::bad_request);
  EXPECT_EQ(classify_pull_status(503, "", {}).signal, PullSignal::no_responders);
}

TEST(PullStatus, ReadsUnfilledPartOfRequest) {
  Headers h{{"Nats-Pending-Messages", {"37"}}, {"Nats-Pending-Bytes", {"4096"}}};
  auto s = classify_pull_status(408, "Request Timeout", h);
  EXPECT_EQ(s.pending_messages, 37u);
  EXPECT_EQ(s.pending_bytes, 4096u);
}

}  // namespace
}  // namespace natsfleet::consume
