#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fleet/ordered/partition_reader.h"

namespace natsfleet::fleet {
namespace {

nats::ConsumerInfo with_floor(uint64_t floor) {
  nats::ConsumerInfo info;
  info.ack_floor_stream_seq = floor;
  return info;
}

TEST(EarlierFloors, TheHighestAndLowestFloorOfTheConsumersThatAnswer) {
  const std::map<std::string, uint64_t> floors{{"w-p3-e1g0", 40}, {"w-p3-e2g0", 75}};
  auto got = earlier_floors({"w-p3-e1g0", "w-p3-e2g0", "w-p3-e2g1"},
                            [&](const std::string& name) -> Result<nats::ConsumerInfo> {
                              auto it = floors.find(name);
                              if (it == floors.end()) return Error{make_error_code(Errc::timeout)};
                              return with_floor(it->second);
                            });
  EXPECT_EQ(got.highest, 75u);
  EXPECT_EQ(got.lowest, 40u);
}

TEST(EarlierFloors, NoAnswerLeavesNothingKnown) {
  auto got = earlier_floors({"w-p3-e1g0"}, [](const std::string&) -> Result<nats::ConsumerInfo> {
    return Error{make_error_code(Errc::timeout)};
  });
  EXPECT_EQ(got.highest, 0u);
  EXPECT_EQ(got.lowest, UINT64_MAX);
}

// Consumers on a server that does not answer: each lookup waits until every one has been asked,
// as each would wait out its timeout. Asked one after another, the first would never see the
// others, and every lookup would come back unanswered.
TEST(EarlierFloors, TheConsumersAreLookedUpAtOnceNotOneAfterAnother) {
  const std::vector<std::string> names{"w-p0-e1g0", "w-p0-e1g1", "w-p0-e2g0", "w-p0-e3g0"};
  std::mutex mu;
  std::condition_variable all_asked;
  size_t asked = 0;
  std::atomic<int> answered{0};
  auto got = earlier_floors(names, [&](const std::string&) -> Result<nats::ConsumerInfo> {
    std::unique_lock lock(mu);
    ++asked;
    all_asked.notify_all();
    // Bounded so that a lookup in turn fails the test instead of hanging it.
    if (!all_asked.wait_for(lock, std::chrono::seconds(10), [&] { return asked == names.size(); }))
      return Error{make_error_code(Errc::timeout)};
    ++answered;
    return with_floor(10 * static_cast<uint64_t>(asked));
  });
  EXPECT_EQ(answered.load(), 4);
  EXPECT_EQ(got.highest, 40u);
}

}  // namespace
}  // namespace natsfleet::fleet
