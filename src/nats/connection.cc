#include "nats/connection.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "base/backoff.h"
#include "nats/auth.h"
#include "nats/connection_internal.h"
#include "nats/handles.h"
#include "nats/status.h"

namespace natsfleet::nats {

namespace {

Connection::Shared* shared_of(void* closure) { return static_cast<Connection::Shared*>(closure); }

void on_connected(natsConnection*, void* closure) {
  auto* s = shared_of(closure);
  guarded("connected", [&] {
    if (s->ever_connected.exchange(true)) s->reconnects.fetch_add(1);
    if (s->events.connected) s->events.connected();
  });
}

void on_disconnected(natsConnection*, void* closure) {
  auto* s = shared_of(closure);
  guarded("disconnected", [&] {
    if (s->events.disconnected) s->events.disconnected();
  });
}

void on_closed(natsConnection* nc, void* closure) {
  auto* s = shared_of(closure);
  guarded("closed", [&] {
    const char* text = nullptr;
    std::string why;
    if (nc && natsConnection_GetLastError(nc, &text) != NATS_OK && text) why = text;
    if (s->events.closed) s->events.closed(why);
  });
  std::lock_guard lock(s->mu);
  s->closed = true;
  s->cv.notify_all();
}

void on_async_error(natsConnection*, natsSubscription*, natsStatus err, void* closure) {
  auto* s = shared_of(closure);
  guarded("error", [&] {
    if (s->events.async_error) s->events.async_error(natsStatus_GetText(err));
  });
}

// Exponential from min to max with +-20% jitter: a fleet of replicas does not reconnect in step.
int64_t reconnect_delay(natsConnection*, int attempts, void* closure) {
  auto* s = shared_of(closure);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const auto delay =
      base::exponential_delay(s->options.reconnect_wait_min, s->options.reconnect_wait_max,
                              attempts > 1 ? static_cast<uint64_t>(attempts - 1) : 0);
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  return static_cast<int64_t>(static_cast<double>(delay.count()) * jitter(rng));
}

Result<void> check(natsStatus s, const char* what) {
  if (s == NATS_OK) return {};
  return status_error(s, what);
}

// The token for this connection attempt: the file's text now, or the last one read when it
// cannot be read (a secret being replaced).
const char* token_from_file(void* closure) {
  auto* s = shared_of(closure);
  guarded("token", [&] {
    if (auto token = read_secret_file(s->options.auth.token_file, "token file")) s->token = *token;
  });
  return s->token.c_str();
}

// The user and password, token or NKey the options name (config validation allows one).
Result<void> set_auth(natsOptions* o, Connection::Shared& shared) {
  const BrokerAuth& options = shared.options.auth;
  if (!options.user.empty()) {
    auto password = read_secret_file(options.password_file, "password file");
    if (!password) return password.error();
    if (auto r = check(natsOptions_SetUserInfo(o, options.user.c_str(), password->c_str()),
                       "user and password");
        !r)
      return r;
  }
  if (!options.token_file.empty()) {
    auto token = read_secret_file(options.token_file, "token file");
    if (!token) return token.error();
    shared.token = *token;
    if (auto r = check(natsOptions_SetTokenHandler(o, token_from_file, &shared), "token"); !r)
      return r;
  }
  if (!options.nkey_seed_file.empty()) {
    auto seed = read_secret_file(options.nkey_seed_file, "NKey seed file");
    if (!seed) return seed.error();
    auto key = nkey_public_key(*seed);
    if (!key)
      return Error{key.error().code, options.nkey_seed_file + ": " + key.error().describe()};
    if (auto r = check(natsOptions_SetNKeyFromSeed(o, key->c_str(), options.nkey_seed_file.c_str()),
                       "nkey");
        !r)
      return r;
  }
  return {};
}

// The credentials file and the user and password, token or NKey the options name.
Result<void> set_credentials(natsOptions* o, Connection::Shared& shared) {
  const std::string& file = shared.options.credentials_file;
  if (!file.empty())
    if (auto r = check(natsOptions_SetUserCredentialsFromFiles(o, file.c_str(), nullptr),
                       "credentials file");
        !r)
      return r;
  return set_auth(o, shared);
}

// TLS, when the options name a CA or a client certificate.
Result<void> set_tls(natsOptions* o, const ConnectOptions& options) {
  if (options.tls_ca.empty() && options.tls_cert.empty()) return {};
  if (auto r = check(natsOptions_SetSecure(o, true), "tls"); !r) return r;
  if (!options.tls_ca.empty())
    if (auto r = check(natsOptions_LoadCATrustedCertificates(o, options.tls_ca.c_str()), "tls ca");
        !r)
      return r;
  if (!options.tls_cert.empty())
    return check(
        natsOptions_LoadCertificatesChain(o, options.tls_cert.c_str(), options.tls_key.c_str()),
        "tls cert/key");
  return {};
}

// A message with headers, for the publish and request calls that carry them.
Result<MsgPtr> message_with_headers(const std::string& subject, const std::string& data,
                                    const Headers& headers) {
  natsMsg* raw = nullptr;
  natsStatus s =
      natsMsg_Create(&raw, subject.c_str(), nullptr, data.data(), static_cast<int>(data.size()));
  if (s != NATS_OK) return status_error(s, "message");
  MsgPtr msg(raw);
  for (const auto& [key, values] : headers)
    for (const auto& v : values)
      if ((s = natsMsgHeader_Add(msg.get(), key.c_str(), v.c_str())) != NATS_OK)
        return status_error(s, "message header");
  return msg;
}

}  // namespace

Connection::Connection(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

Result<std::unique_ptr<Connection>> Connection::open(const ConnectOptions& options,
                                                     ConnectionEvents events) {
  if (options.servers.empty())
    return Result<std::unique_ptr<Connection>>(Errc::invalid_argument, "no servers");
  auto shared = std::make_shared<Shared>();
  shared->options = options;
  shared->events = std::move(events);

  natsOptions* raw = nullptr;
  if (auto r = check(natsOptions_Create(&raw), "natsOptions_Create"); !r) return r.error();
  OptionsPtr opts(raw);
  std::vector<const char*> urls;
  for (const auto& s : options.servers) urls.push_back(s.c_str());
  void* closure = shared.get();
  natsOptions* o = opts.get();
  const struct {
    natsStatus status;
    const char* what;
  } steps[] = {
      {natsOptions_SetServers(o, urls.data(), static_cast<int>(urls.size())), "servers"},
      {natsOptions_SetName(o, options.name.c_str()), "name"},
      {natsOptions_SetMaxReconnect(o, options.max_reconnect), "max_reconnect"},
      {natsOptions_SetCustomReconnectDelay(o, reconnect_delay, closure), "reconnect delay"},
      {natsOptions_SetTimeout(o, options.connect_timeout.count()), "connect timeout"},
      {natsOptions_SetPingInterval(o, options.ping_interval.count()), "ping interval"},
      {natsOptions_SetMaxPingsOut(o, 2), "max pings out"},
      {natsOptions_SetReconnectBufSize(o, 32 * 1024 * 1024), "reconnect buffer"},
      {natsOptions_SetClosedCB(o, on_closed, closure), "closed callback"},
      {natsOptions_SetDisconnectedCB(o, on_disconnected, closure), "disconnected callback"},
      {natsOptions_SetReconnectedCB(o, on_connected, closure), "reconnected callback"},
      {natsOptions_SetErrorHandler(o, on_async_error, closure), "error handler"},
      {natsOptions_SetRetryOnFailedConnect(o, true, on_connected, closure), "retry connect"},
  };
  for (const auto& step : steps)
    if (auto r = check(step.status, step.what); !r) return r.error();
  if (auto r = set_credentials(o, *shared); !r) return r.error();
  if (auto r = set_tls(o, options); !r) return r.error();

  natsConnection* nc = nullptr;
  natsStatus s = natsConnection_Connect(&nc, o);
  if (s == NATS_OK) {
    shared->ever_connected = true;
  } else if (s != NATS_NOT_YET_CONNECTED) {
    return status_error(s, "connect");
  }
  shared->nc = nc;
  shared->graves->set_connection(nc);
  // The first connect within natsConnection_Connect fires no callback: report it ourselves.
  if (s == NATS_OK && shared->events.connected) guarded("connected", shared->events.connected);
  return std::unique_ptr<Connection>(new Connection(std::move(shared)));
}

Connection::~Connection() {
  shutdown(std::chrono::milliseconds(0));
  shared_->graves->reader_gone();
  natsConnection_Destroy(shared_->nc);
}

ConnectionState Connection::state() const {
  switch (natsConnection_Status(shared_->nc)) {
    case NATS_CONN_STATUS_CONNECTED:
      return ConnectionState::connected;
    case NATS_CONN_STATUS_RECONNECTING:
    case NATS_CONN_STATUS_DISCONNECTED:
      return ConnectionState::reconnecting;
    case NATS_CONN_STATUS_CONNECTING:
      return ConnectionState::connecting;
    case NATS_CONN_STATUS_DRAINING_SUBS:
    case NATS_CONN_STATUS_DRAINING_PUBS:
      return ConnectionState::draining;
    case NATS_CONN_STATUS_CLOSED:
      return ConnectionState::closed;
  }
  return ConnectionState::closed;
}

uint64_t Connection::reconnects() const { return shared_->reconnects.load(); }

std::string Connection::last_error() const {
  const char* text = nullptr;
  const natsStatus s = natsConnection_GetLastError(shared_->nc, &text);
  if (s == NATS_OK) return {};
  return text != nullptr && *text != '\0' ? std::string(text) : std::string(natsStatus_GetText(s));
}

Result<void> Connection::publish(const std::string& subject, const std::string& data,
                                 const std::string& reply) {
  natsStatus s = reply.empty()
                     ? natsConnection_Publish(shared_->nc, subject.c_str(), data.data(),
                                              static_cast<int>(data.size()))
                     : natsConnection_PublishRequest(shared_->nc, subject.c_str(), reply.c_str(),
                                                     data.data(), static_cast<int>(data.size()));
  return check(s, "publish");
}

Result<void> Connection::publish(const std::string& subject, const std::string& data,
                                 const Headers& headers) {
  auto msg = message_with_headers(subject, data, headers);
  if (!msg) return msg.error();
  return check(natsConnection_PublishMsg(shared_->nc, msg->get()), "publish");
}

Result<InboundMessage> Connection::request(const std::string& subject, const std::string& data,
                                           std::chrono::milliseconds timeout) {
  natsMsg* raw = nullptr;
  natsStatus s = natsConnection_Request(&raw, shared_->nc, subject.c_str(), data.data(),
                                        static_cast<int>(data.size()), timeout.count());
  if (s != NATS_OK) return status_error(s, subject.c_str());
  MsgPtr reply(raw);
  InboundMessage in;
  copy_message(reply.get(), in);
  return in;
}

Result<InboundMessage> Connection::request(const std::string& subject, const std::string& data,
                                           const Headers& headers,
                                           std::chrono::milliseconds timeout) {
  auto msg = message_with_headers(subject, data, headers);
  if (!msg) return msg.error();
  natsMsg* reply_raw = nullptr;
  natsStatus s = natsConnection_RequestMsg(&reply_raw, shared_->nc, msg->get(), timeout.count());
  if (s != NATS_OK) return status_error(s, subject.c_str());
  MsgPtr reply(reply_raw);
  InboundMessage in;
  copy_message(reply.get(), in);
  return in;
}

std::string Connection::new_inbox() const {
  natsInbox* raw = nullptr;
  if (natsInbox_Create(&raw) != NATS_OK) return "_INBOX.natsfleet";
  InboxPtr inbox(raw);
  return std::string(inbox.get());
}

Result<ServerVersion> Connection::server_version() const {
  char url[512];
  if (natsConnection_GetConnectedUrl(shared_->nc, url, sizeof url) != NATS_OK || url[0] == '\0')
    return Error{make_error_code(Errc::not_connected), "not connected to a server"};
  {
    std::lock_guard lock(shared_->versions_mu);
    if (auto it = shared_->versions.find(url); it != shared_->versions.end()) return it->second;
  }
  auto version = read_server_version(url, shared_->options.connect_timeout);
  if (!version) return version.error();
  std::lock_guard lock(shared_->versions_mu);
  shared_->versions[url] = *version;
  return *version;
}

Result<void> Connection::flush(std::chrono::milliseconds timeout) {
  return check(natsConnection_FlushTimeout(shared_->nc, timeout.count()), "flush");
}

void Connection::shutdown(std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  ConnectionState st = state();
  if (st == ConnectionState::closed) return;
  // Drain is only legal on a connected connection (nats.c refuses it while reconnecting):
  // then, and when no time is left, close.
  if (st == ConnectionState::connected && deadline.count() > 0 &&
      natsConnection_DrainTimeout(shared_->nc, deadline.count()) == NATS_OK) {
    std::unique_lock lock(shared_->mu);
    shared_->cv.wait_until(lock, until, [&] { return shared_->closed; });
  }
  natsConnection_Close(shared_->nc);
  std::unique_lock lock(shared_->mu);
  // The closed callback runs on nats.c's thread; it must be done before Shared can go away.
  shared_->cv.wait_for(lock, std::chrono::seconds(5), [&] { return shared_->closed; });
}

}  // namespace natsfleet::nats
