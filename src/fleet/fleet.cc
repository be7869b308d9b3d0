// Fleet and Subscription, the public API: each call goes to Fleet::Impl (fleet_impl.h); a
// Subscription handle reaches it through the FleetLink ~Fleet detaches first.
#include "natsfleet/fleet.h"

#include <system_error>
#include <thread>

#include "fleet/fleet_impl.h"

namespace natsfleet {

Fleet::Fleet(FleetOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Fleet::~Fleet() {
  impl_->link()->detach();  // a handle's calls answer shutting_down from here on
  if (impl_->close()) return;
  // A handler overran the deadline: what it uses is freed once it returns, on a thread of its
  // own. Without a thread to spare the lambda is destroyed here, which waits for it.
  try {
    std::thread([impl = std::move(impl_)]() mutable { impl.reset(); }).detach();
  } catch (const std::system_error&) {
  }
}
Result<Subscription> Fleet::add_work(WorkSpec spec, WorkHandler handler) {
  std::string name = spec.name;
  auto id = impl_->add_work(std::move(spec), std::move(handler));
  if (!id) return id.error();
  return Subscription(impl_->link(), std::move(name), *id);
}
Result<Subscription> Fleet::add_broadcast(BroadcastSpec spec, BroadcastHandler handler) {
  std::string name = spec.name;
  auto id = impl_->add_broadcast(std::move(spec), std::move(handler));
  if (!id) return id.error();
  return Subscription(impl_->link(), std::move(name), *id);
}
Result<void> Fleet::remove(const std::string& name, std::chrono::milliseconds deadline) {
  return impl_->remove(name, deadline);
}
void Fleet::on_fatal(FatalHandler handler) { impl_->on_fatal(std::move(handler)); }
Result<void> Fleet::start() { return impl_->start(); }
Result<void> Fleet::publish(const std::string& subject, const std::string& data,
                            const std::string& msg_id, const Headers& headers) {
  return impl_->publish(subject, data, msg_id, headers);
}
Result<uint64_t> Fleet::publish_to_stream(const std::string& subject, const std::string& data,
                                          const std::string& msg_id,
                                          std::chrono::milliseconds timeout,
                                          const Headers& headers) {
  return impl_->publish_to_stream(subject, data, msg_id, timeout, headers);
}
Result<std::optional<Message>> Fleet::last_stored(const std::string& stream,
                                                  const std::string& subject,
                                                  std::chrono::milliseconds timeout) {
  return impl_->last_stored(stream, subject, timeout);
}
FleetHealth Fleet::health() const { return impl_->health(); }

namespace {
Error no_subscription() {
  return Error{make_error_code(Errc::invalid_argument),
               "this Subscription was made by default and stands for none"};
}
}  // namespace

Result<void> Subscription::drain(std::chrono::milliseconds deadline) const {
  if (!link_) return no_subscription();
  return link_->call<Result<void>>(
      [&](Fleet::Impl& fleet) { return fleet.remove(name_, deadline, id_); });
}
Result<void> Subscription::stop() const { return drain(std::chrono::milliseconds(0)); }
Result<SubscriptionHealth> Subscription::health() const {
  if (!link_) return no_subscription();
  return link_->call<Result<SubscriptionHealth>>(
      [&](Fleet::Impl& fleet) { return fleet.health_of(name_, id_); });
}
void Fleet::shutdown(std::chrono::milliseconds deadline) { impl_->shutdown(deadline); }

}  // namespace natsfleet
