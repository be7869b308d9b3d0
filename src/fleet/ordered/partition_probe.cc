#include "fleet/ordered/partition_probe.h"

#include <condition_variable>
#include <mutex>

#include "base/subject_tokens.h"
#include "nats/connection.h"

namespace natsfleet::fleet {
namespace {

using std::chrono::milliseconds;

constexpr const char* kProbeToken = "natsfleet-probe";
constexpr int kProbeKeys = 16;

}  // namespace

namespace {

// One probe: where the broker maps a subject of the work's own, with `key` in the key token and
// a fixed token in every other wildcard.
Result<void> probe_key(nats::Connection& connection, const PartitionPlan& plan,
                       const std::string& key, milliseconds timeout) {
  auto tokens = base::subject_tokens(plan.source());
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] == "*" || tokens[i] == ">")
      tokens[i] = static_cast<int>(i) + 1 == plan.key_token() ? std::string_view(key)
                                                              : std::string_view(kProbeToken);
  const std::string published = base::join_subject(tokens);
  const std::string expected = plan.mapped(published);
  auto anywhere = base::subject_tokens(expected);
  anywhere[plan.partition_token() - 1] = "*";

  std::mutex mu;
  std::condition_variable landed_cv;
  std::string landed;
  auto on_message = [&](nats::InboundMessage&& m) {
    std::lock_guard lock(mu);
    if (landed.empty()) landed = m.subject;
    landed_cv.notify_all();
  };
  auto mapped_sub = connection.subscribe(base::join_subject(anywhere), "", on_message);
  if (!mapped_sub)
    return Error{mapped_sub.error().code, "cannot subscribe to " + base::join_subject(anywhere) +
                                              ": " + mapped_sub.error().message};
  auto plain_sub = connection.subscribe(published, "", on_message);
  if (!plain_sub)
    return Error{plain_sub.error().code,
                 "cannot subscribe to " + published + ": " + plain_sub.error().message};
  // No stream has this name, so whichever stream holds the subject refuses to store it.
  const Headers headers{{"Nats-Expected-Stream", {std::string(kProbeToken) + "-stores-nothing"}}};
  if (auto sent = connection.publish(published, "", headers); !sent)
    return Error{sent.error().code,
                 "cannot publish the probe " + published + ": " + sent.error().message};
  std::string where;
  {
    std::unique_lock lock(mu);
    landed_cv.wait_for(lock, timeout, [&] { return !landed.empty(); });
    where = landed;
  }
  mapped_sub.value().reset();
  plain_sub.value().reset();
  if (where == expected) return {};
  if (where.empty())
    return Error{Errc::timeout, "a probe published to " + published +
                                    " reached no subscriber within " +
                                    std::to_string(timeout.count()) +
                                    " ms (is publishing and subscribing allowed?)"};
  if (where == published)
    return Error{Errc::invalid_argument, "the broker has no subject mapping for " + plan.source()};
  return Error{Errc::invalid_argument, "the broker maps " + published + " to " + where +
                                           ", the plan expects " + expected +
                                           " (another mapping, or another partition count)"};
}

}  // namespace

Result<void> probe_partition_mapping(nats::Connection& connection, const PartitionPlan& plan,
                                     milliseconds timeout) {
  // Several fixed keys: one key may land where the plan says under another partition count too
  // (fnv % 8 equals fnv % 16 for half of all keys); these 16 tell 16 from 4, 8 and 32, and they
  // are the same on every run, so a check that passes once passes again.
  for (int i = 0; i < kProbeKeys; ++i) {
    if (auto probed = probe_key(connection, plan,
                                std::string(kProbeToken) + "-" + std::to_string(i), timeout);
        !probed)
      return probed;
  }
  return {};
}

}  // namespace natsfleet::fleet
