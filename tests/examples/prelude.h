// What every compiled example (tests/examples/extract_examples.py) starts from: the public API,
// the standard headers examples use, and the names an example leaves to the reader, declared so
// the example compiles as written. Nothing here is defined: the examples are compiled, not run.
#pragma once

#include <natsfleet/broker_auth.h>
#include <natsfleet/dead_letter.h>
#include <natsfleet/embedded_broker.h>
#include <natsfleet/error.h>
#include <natsfleet/fleet.h>
#include <natsfleet/health.h>
#include <natsfleet/message.h>
#include <natsfleet/natsfleet.h>
#include <natsfleet/redact.h>
#include <natsfleet/relay.h>
#include <natsfleet/relay_gateway.h>
#include <natsfleet/spec.h>
#include <natsfleet/validate.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace std::chrono_literals;

// The service's own objects and functions, as the examples name them.
extern natsfleet::Fleet fleet;
extern natsfleet::WorkSpec spec;
extern std::shared_ptr<natsfleet::RelaySession> session;
extern std::string member_id;
extern std::string status_json;
extern std::string msg_id;
struct Store {
  void apply_if_newer(const std::string& key, std::uint64_t seq, std::string_view data);
};
extern Store store;

void send(std::string_view data);
[[noreturn]] void die(const std::string& why);
bool ready();
bool smtp_reachable();
bool valid(std::string_view data);
void push_to_sessions(const natsfleet::Message& m);
void request_exit(int code);
std::string key_of(const natsfleet::Message& m);
void copy_chunk(std::string_view data, int chunk);
extern bool running;
bool write_rows(const std::vector<natsfleet::Message>& batch);
