// What nats::Connection's two source files share: the connection's state, the subscriptions
// waiting to be freed, the copy out of a nats.c message, and the guard at every callback.
#pragma once

#include <nats/nats.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "nats/connection.h"
#include "nats/handles.h"

namespace natsfleet::nats {

class Graves {
 public:
  void set_connection(natsConnection* nc) { nc_ = nc; }

  // `sub` is unsubscribed: frees it, with every one waiting, once nats.c's reader has passed
  // whatever was sent before; keeps them all when that cannot be known now. Waits at most
  // kFlushTimeout, and not at all for kQuietAfterFailure after a flush that got no answer (a
  // broker that stops answering costs one wait, not one per subscription). What `due` holds
  // when it goes out of scope is freed.
  void bury(natsSubscription* sub) {
    std::vector<SubscriptionPtr> due;
    bool gone = false;
    bool quiet = false;
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard lock(mu_);
      gone = reader_gone_;
      quiet = now < quiet_until_;
      due.swap(waiting_);
    }
    due.emplace_back(sub);
    if (gone) return;
    // Every one in `due` was unsubscribed before this PING left; its PONG comes after anything
    // the broker sent them, and the one reader thread handles both in order.
    if (!quiet && natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED &&
        natsConnection_FlushTimeout(nc_, kFlushTimeout.count()) == NATS_OK)
      return;
    std::lock_guard lock(mu_);
    if (reader_gone_) return;
    if (!quiet) quiet_until_ = std::chrono::steady_clock::now() + kQuietAfterFailure;
    std::move(due.begin(), due.end(), std::back_inserter(waiting_));
  }

  // The connection is closed and its reader thread joined: nothing reads a subscription now.
  void reader_gone() {
    std::vector<SubscriptionPtr> due;
    std::lock_guard lock(mu_);
    reader_gone_ = true;
    due.swap(waiting_);
  }

 private:
  static constexpr std::chrono::milliseconds kFlushTimeout{1000};
  static constexpr std::chrono::milliseconds kQuietAfterFailure{5000};

  natsConnection* nc_ = nullptr;
  std::mutex mu_;
  bool reader_gone_ = false;
  std::chrono::steady_clock::time_point quiet_until_{};
  std::vector<SubscriptionPtr> waiting_;
};

struct Connection::Shared {
  std::shared_ptr<Graves> graves = std::make_shared<Graves>();
  ConnectOptions options;
  ConnectionEvents events;
  natsConnection* nc = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  bool closed = false;
  std::atomic<uint64_t> reconnects{0};
  std::atomic<bool> ever_connected{false};
  std::mutex versions_mu;
  std::map<std::string, ServerVersion> versions;  // by the server's URL
  std::string token;  // as last read from options.token_file (nats.c's connecting thread)
};

// nats.c's own per-subscription queue (see subscribe()): a backstop, not the working bound.
inline constexpr int kPendingMessagesLimit = 1'000'000;
inline constexpr int kPendingBytesLimit = 512 * 1024 * 1024;

// Every exception is stopped here: nothing may unwind into nats.c.
template <typename F>
void guarded(const char* where, F&& f) noexcept {
  try {
    f();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "natsfleet: exception in %s callback: %s\n", where, e.what());
  } catch (...) {
    std::fprintf(stderr, "natsfleet: unknown exception in %s callback\n", where);
  }
}

// Copies subject, reply, data, status and headers out of `msg`.
void copy_message(natsMsg* msg, InboundMessage& out);

}  // namespace natsfleet::nats
