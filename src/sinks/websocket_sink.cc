#include "sinks/websocket_sink.h"

#include <stdexcept>

namespace natsfleet::sinks {

WebSocketSink::WebSocketSink(WebSocketSinkOptions options) : options_(std::move(options)) {
  relay::GatewayOptions gateway;
  gateway.host = options_.host;
  gateway.port = static_cast<uint16_t>(options_.port);
  gateway.web_root = options_.web_root;
  gateway.max_sessions = options_.max_sessions;
  gateway_ = std::make_unique<relay::WebSocketGateway>(gateway, registry_);
  if (auto started = gateway_->start(); !started)
    throw std::invalid_argument("websocket sink: " + started.error().describe());
}

WebSocketSink::~WebSocketSink() { stop(); }

SinkResult WebSocketSink::deliver(const Message& message, const std::string&) {
  const std::string key = subject_token(message.subject(), options_.key_token);
  if (!key.empty()) registry_.deliver(key, std::make_shared<const std::string>(message.data()));
  return {};
}

std::string WebSocketSink::describe() const {
  return "websocket ws://" + options_.host + ":" + std::to_string(gateway_->port()) +
         "/ws?member=<subject token " + std::to_string(options_.key_token) + ">";
}

void WebSocketSink::stop() { gateway_->stop(); }

}  // namespace natsfleet::sinks
