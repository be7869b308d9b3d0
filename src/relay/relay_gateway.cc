#include "natsfleet/relay_gateway.h"

#include <spdlog/spdlog.h>

#include "base/log_event.h"
#include "relay/relay_internal.h"
#include "relay/websocket_gateway.h"

namespace natsfleet {
namespace {

relay::GatewayOptions gateway_options(RelayGatewayOptions options) {
  relay::GatewayOptions g;
  g.host = std::move(options.host);
  g.port = options.port;
  g.web_root = std::move(options.web_root);
  g.allowed_origins = std::move(options.allowed_origins);
  g.token_secret = std::move(options.token_secret);
  g.member_header = std::move(options.member_header);
  g.max_sessions = options.max_sessions;
  g.ping_interval = options.ping_interval;
  g.idle_timeout = options.idle_timeout;
  return g;
}

}  // namespace

class RelayGateway::Impl {
 public:
  Impl(Relay& relay, relay::SessionRegistry& registry, RelayGatewayOptions options)
      : gateway_(gateway_options(std::move(options)), registry) {
    gateway_.on_attach([&relay](const std::string&) {
      if (auto ensured = relay.ensure_subscribed(); !ensured)
        base::log_event(*spdlog::default_logger(), spdlog::level::warn,
                        {{"event", "relay-error"}, {"server", "relay"}}, "relay gateway: {}",
                        ensured.error().describe());
    });
  }

  relay::WebSocketGateway gateway_;
};

RelayGateway::RelayGateway(Relay& relay, RelayGatewayOptions options)
    : impl_(std::make_unique<Impl>(relay, relay::registry_of(*relay.impl_), std::move(options))) {}
RelayGateway::~RelayGateway() = default;

Result<void> RelayGateway::start() { return impl_->gateway_.start(); }
void RelayGateway::stop() { impl_->gateway_.stop(); }
int RelayGateway::port() const { return impl_->gateway_.port(); }

RelayGatewayStats RelayGateway::stats() const {
  const relay::GatewayStats g = impl_->gateway_.stats();
  RelayGatewayStats s;
  s.sessions = g.sessions;
  s.attached = g.attached;
  s.refused_full = g.refused_full;
  s.refused = g.refused_member + g.refused_full + g.refused_origin + g.refused_unauthenticated +
              g.refused_expired + g.refused_bad_token + g.refused_member_mismatch;
  s.frames_sent = g.frames_sent;
  s.dropped_slow = g.dropped_slow;
  s.closed_idle = g.closed_idle;
  return s;
}

}  // namespace natsfleet
