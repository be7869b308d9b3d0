// The worker sink's answer parser: one line a worker wrote on its stdout (outside input: any
// program the operator configured, possibly broken).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sinks/worker_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  (void)natsfleet::sinks::parse_worker_answer(line);
  return 0;
}
