// Says why the broker cannot be reached, while it cannot. From the first moment without a
// connection (at start, or after a disconnect) it looks for the cause: what the client last
// reported, and for each server what a plain TCP connection finds (a name that does not resolve,
// a refused port, no answer, a port that never speaks NATS). The cause is readable at once (for
// /status); a warning with it and the time without a broker is logged after `first`, then at
// doubling intervals up to `longest`; the return is logged with how long it took.
//
//   BrokerWatch watch({.servers = urls}, [&] { return connection.last_error(); }, log);
//   watch.disconnected();  ...  watch.connected();  // from the connection's events
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/logger.h>

namespace natsfleet::fleet {

class BrokerWatch {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::vector<std::string> servers;
    std::chrono::milliseconds probe_timeout{2000};  // of one TCP connection attempt
    std::chrono::milliseconds first{5000};
    std::chrono::milliseconds longest{300'000};
  };
  // What the client last reported failing (empty: nothing).
  using ClientError = std::function<std::string()>;

  // Starts watching, counting the time without a broker from now.
  BrokerWatch(Options options, ClientError client_error, spdlog::logger& log);
  ~BrokerWatch();  // stops its thread
  BrokerWatch(const BrokerWatch&) = delete;
  BrokerWatch& operator=(const BrokerWatch&) = delete;

  void connected();
  void disconnected();
  // Looks and logs no more (a shutdown's disconnect is no outage); waits for a look under way.
  void stop();
  // Why the broker cannot be reached, as last found; empty while connected and before the first
  // look. Any thread.
  std::string cause() const;
  // The cause as found, or looked for now (blocking up to probe_timeout a server) when there is
  // none yet: for a connection that closed for good before the first look ended.
  std::string cause_now() const;
  // The wait before warning line `n` (0-based) of one outage: first, then doubled, at most longest.
  static std::chrono::milliseconds interval(const Options& options, int n);

 private:
  void run(std::stop_token stop);
  std::string probe() const;

  const Options options_;
  const ClientError client_error_;
  spdlog::logger& log_;

  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  bool connected_ = false;
  uint64_t outage_ = 0;  // rises with every change: a cause found meanwhile belongs to none
  Clock::time_point away_since_;
  Clock::time_point next_line_;
  int lines_ = 0;
  bool looked_ = false;  // the cause of this outage was looked for
  std::string cause_;
  std::jthread thread_;  // last: it starts once the rest is ready
};

}  // namespace natsfleet::fleet
