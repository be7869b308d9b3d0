// Where most library tests start: a broker of the test's own holding stream JOBS ("jobs.>"),
// and an admin client on it. A test suite uses it as its fixture (TEST_F).
#pragma once

#include <gtest/gtest.h>

#include "support/broker_client.h"
#include "support/nats_server.h"

namespace natsfleet::testing {

class JobsBroker : public ::testing::Test {
 protected:
  JobsBroker() { admin.create_stream("JOBS", {"jobs.>"}); }

  NatsServer server;
  BrokerClient admin{server.url()};
};

// The same, for a suite run once per parameter (TEST_P).
template <typename Param>
class JobsBrokerWith : public JobsBroker, public ::testing::WithParamInterface<Param> {};

}  // namespace natsfleet::testing
