// Helpers shared by the sink tests: messages in the shapes the daemon hands over, a private
// temporary directory, and polling with a deadline.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "natsfleet/message.h"
#include "support/wait_for.h"

namespace natsfleet::sinks::testing {

inline Message js_message(std::string data, uint64_t stream_seq = 42, uint64_t delivered = 1,
                          std::string subject = "mail.outgoing") {
  Delivery d;
  d.stream = "MAIL";
  d.consumer = "mail-relay";
  d.stream_seq = stream_seq;
  d.consumer_seq = stream_seq;
  d.delivered = delivered;
  d.timestamp_ns = 1'795'988'985'123'000'000;
  return Message(std::move(subject), std::move(data), {}, d);
}

// A delivery of ordered work: a JetStream message with its fencing token.
inline Message ordered_message(std::string data, uint64_t stream_seq, int partition, uint64_t epoch,
                               std::string subject = "orders.42.7") {
  const Message m = js_message(std::move(data), stream_seq, 1, std::move(subject));
  return Message(m.subject(), m.data(), {}, m.delivery(), {}, nullptr,
                 FencingToken{partition, epoch});
}

inline Message core_message(std::string data, std::string subject = "member.7.status") {
  return Message(std::move(subject), std::move(data), {});
}

// A directory removed with everything in it when the test ends.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "natsfleet-sinks-XXXXXX");
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    path_ = ::mkdtemp(buf.data());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

using ::natsfleet::testing::wait_for;

inline std::chrono::milliseconds elapsed_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start);
}

}  // namespace natsfleet::sinks::testing
