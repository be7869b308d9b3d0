// The relay for services in any language: a [[broadcast]] whose sink is a WebSocket gateway. Each
// replica's daemon receives every status and hands it to the browser sessions attached to that
// replica for the key the subject names (member.alice.status, key_token 2 -> "alice"). The
// message's data goes to the browser unchanged.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "natsfleet/validate.h"
#include "relay/session_registry.h"
#include "relay/websocket_gateway.h"
#include "sinks/sink.h"

namespace natsfleet::sinks {

class WebSocketSink final : public Sink {
 public:
  // Listens at once: throws std::invalid_argument naming the address when it cannot.
  explicit WebSocketSink(WebSocketSinkOptions options);
  ~WebSocketSink() override;

  // Always an ack: a status for a key with no session here is for another replica's sessions.
  SinkResult deliver(const Message& message, const std::string& subscription) override;
  std::string describe() const override;
  void stop() override;
  int port() const { return gateway_->port(); }
  relay::GatewayStats stats() const { return gateway_->stats(); }
  size_t max_sessions() const { return options_.max_sessions; }
  // Whether a caller must prove who the member is (a token or the proxy's header).
  bool authenticates() const {
    return !options_.token_secret_file.empty() || !options_.member_header.empty();
  }

 private:
  const WebSocketSinkOptions options_;
  relay::SessionRegistry registry_;
  std::unique_ptr<relay::WebSocketGateway> gateway_;
};

// The `key_token`th (1-based) token of `subject`, or "" when it has fewer tokens.
using natsfleet::subject_token;

}  // namespace natsfleet::sinks
