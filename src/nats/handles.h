// RAII ownership of nats.c handles. The connection is the one exception: Connection's destructor
// frees it itself, after its reader is joined and the buried subscriptions are freed.
#pragma once

#include <nats/nats.h>

#include <memory>

namespace natsfleet::nats {

struct OptionsDeleter {
  void operator()(natsOptions* p) const noexcept { natsOptions_Destroy(p); }
};
struct SubscriptionDeleter {
  void operator()(natsSubscription* p) const noexcept { natsSubscription_Destroy(p); }
};
struct MsgDeleter {
  void operator()(natsMsg* p) const noexcept { natsMsg_Destroy(p); }
};
struct InboxDeleter {
  void operator()(natsInbox* p) const noexcept { natsInbox_Destroy(p); }
};

using OptionsPtr = std::unique_ptr<natsOptions, OptionsDeleter>;
using SubscriptionPtr = std::unique_ptr<natsSubscription, SubscriptionDeleter>;
using MsgPtr = std::unique_ptr<natsMsg, MsgDeleter>;
using InboxPtr = std::unique_ptr<natsInbox, InboxDeleter>;

}  // namespace natsfleet::nats
