#include "sinks/websocket_sink.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "relay/member_token.h"

namespace natsfleet::sinks {

WebSocketSink::WebSocketSink(WebSocketSinkOptions options) : options_(std::move(options)) {
  relay::GatewayOptions gateway;
  gateway.host = options_.host;
  gateway.port = options_.port;
  gateway.web_root = options_.web_root;
  gateway.max_sessions = options_.max_sessions;
  gateway.max_http_connections = options_.max_http_connections;
  gateway.allowed_origins = options_.allowed_origins;
  gateway.member_header = options_.member_header;
  if (!options_.token_secret_file.empty()) {
    // Errors name the file, never what it holds.
    std::ifstream in(options_.token_secret_file, std::ios::binary);
    if (!in)
      throw std::invalid_argument("websocket sink: cannot read token secret file " +
                                  options_.token_secret_file + ": " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    gateway.token_secret = relay::trim_secret(text.str());
    if (gateway.token_secret.size() < relay::kMinTokenSecretBytes)
      throw std::invalid_argument("websocket sink: token secret file " +
                                  options_.token_secret_file + " holds fewer than " +
                                  std::to_string(relay::kMinTokenSecretBytes) + " bytes");
  }
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
