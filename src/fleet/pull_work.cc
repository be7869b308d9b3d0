// Fleet::add_pull_work and PullWork (include/natsfleet/fleet.h): a work whose handler hands each
// message to a PullQueue and returns Disposition::later(), so the application's fetch() takes it
// and its verdict comes from there.
#include <utility>

#include "fleet/pull_queue.h"
#include "natsfleet/fleet.h"

namespace natsfleet {
namespace {

constexpr size_t kDefaultWaiting = 256;  // unfetched messages per replica when batch is 0

}  // namespace

Result<PullWork> Fleet::add_pull_work(WorkSpec spec) {
  if (spec.per_key)
    return Result<PullWork>(Errc::invalid_argument,
                            "work " + spec.name +
                                ": add_pull_work takes no per-key order (a key's messages go to "
                                "a handler one at a time): use add_work");
  auto queue = std::make_shared<PullQueue>(
      spec.flow.batch > 0 ? static_cast<size_t>(spec.flow.batch) : kDefaultWaiting);
  auto added = add_work(std::move(spec), [queue](const Message& message) {
    (void)queue->put(message);  // closed: the stopping work gives it back
    return Disposition::later();
  });
  if (!added) return added.error();
  return PullWork(std::move(*added), std::move(queue));
}

Result<std::vector<Message>> PullWork::fetch(std::size_t n,
                                             std::chrono::milliseconds max_wait) const {
  using Fetched = Result<std::vector<Message>>;
  if (!queue_) return Fetched(Errc::invalid_argument, "fetch: this PullWork stands for no work");
  if (n == 0) return Fetched(Errc::invalid_argument, "fetch: asked for no message");
  // Until a message came, the queue cannot see its work stop or its Fleet go: ask the work.
  if (!queue_->closed() && !queue_->watching())
    if (auto health = subscription_.health(); !health) return health.error();
  return queue_->fetch(n, max_wait);
}

}  // namespace natsfleet
