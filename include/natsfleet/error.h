// Errors natsfleet reports: broker trouble is routine, so it travels as a value, never as an
// exception. Codes from nats.c keep their numbers in nats_category(); JetStream API errors keep
// their `err_code` in jetstream_category(); natsfleet's own conditions live in error_category().
#pragma once

#include <string>
#include <system_error>
#include <utility>
#include <variant>

#include "natsfleet/export.h"

namespace natsfleet {

enum class Errc {
  not_connected = 1,      // the connection is not (yet, or no longer) up
  timeout,                // the broker did not answer in time
  no_stream_for_subject,  // no stream holds the subject (yet)
  invalid_argument,       // a spec or an option is unusable
  shutting_down,          // the fleet is stopping
  protocol,               // the broker answered something natsfleet cannot read
  no_responders,          // nobody serves the subject (no stream, JetStream unavailable, or a
                          // stream electing a leader: not proof that no stream holds it)
  no_resources,           // the system refused a thread (or another resource) natsfleet needs
};

NATSFLEET_API const std::error_category& error_category() noexcept;
// Values are nats.c natsStatus.
NATSFLEET_API const std::error_category& nats_category() noexcept;
// Values are JetStream err_code.
NATSFLEET_API const std::error_category& jetstream_category() noexcept;

inline std::error_code make_error_code(Errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

// JetStream API err_code values natsfleet acts on.
inline constexpr int kJsConsumerNotFound = 10014;
inline constexpr int kJsStreamNotFound = 10059;
// A publish's Nats-Expected-Last-Subject-Sequence was not the subject's last sequence.
inline constexpr int kJsWrongLastSequence = 10071;

// A code with the broker's own words (the API's "description"), for logs and /status.
struct Error {
  std::error_code code;
  std::string message;

  std::string describe() const { return message.empty() ? code.message() : message; }
  // The JetStream API answered with this error code (its "err_code").
  bool is_jetstream(int err_code) const {
    return code.category() == jetstream_category() && code.value() == err_code;
  }
  bool is_consumer_not_found() const { return is_jetstream(kJsConsumerNotFound); }
  bool is_stream_not_found() const { return is_jetstream(kJsStreamNotFound); }
};

// A value or the Error that prevented it.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design
  Result(Errc e, std::string message = {}) : v_(Error{make_error_code(e), std::move(message)}) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design
  Result(Errc e, std::string message = {})
      : error_{make_error_code(e), std::move(message)}, ok_(false) {}

  bool ok() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace natsfleet

template <>
struct std::is_error_code_enum<natsfleet::Errc> : std::true_type {};
