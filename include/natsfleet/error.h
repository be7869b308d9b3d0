// Errors natsfleet reports: broker trouble is routine, so it travels as a value, never as an
// exception. Codes from nats.c keep their numbers in nats_category(); JetStream API errors keep
// their `err_code` in jetstream_category(); natsfleet's own conditions live in error_category().
#pragma once

#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
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
  already_settled,        // the message's verdict was given already (each is given once)
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
  std::error_code code{};
  std::string message{};

  std::string describe() const { return message.empty() ? code.message() : message; }
  // The JetStream API answered with this error code (its "err_code").
  bool is_jetstream(int err_code) const {
    return code.category() == jetstream_category() && code.value() == err_code;
  }
  bool is_consumer_not_found() const { return is_jetstream(kJsConsumerNotFound); }
  bool is_stream_not_found() const { return is_jetstream(kJsStreamNotFound); }
};

// What Result::value() throws when the Result holds an Error: the Error itself.
class NATSFLEET_API BadResultAccess : public std::exception {
 public:
  explicit BadResultAccess(Error error)
      : error_(std::move(error)), what_("natsfleet::Result holds an error: " + error_.describe()) {}
  const Error& error() const noexcept { return error_; }
  const char* what() const noexcept override;

 private:
  Error error_;
  std::string what_;
};

template <typename T>
class Result;

// Whether R is a natsfleet::Result (what and_then's function must return).
template <typename R>
inline constexpr bool is_result_v = false;
template <typename U>
inline constexpr bool is_result_v<Result<U>> = true;

// A value or the Error that prevented it, shaped as std::expected<T, Error> (has_value, value,
// value_or, error, and_then, transform, or_else). Not thread-safe; copy it to share it.
//
//   // The stream sequence of the newest order of customer 42, or 0 when none or on an error.
//   uint64_t seq = fleet.last_stored("ORDERS", "orders.42", 2s)  // Result<optional<Message>>
//                      .transform([](const std::optional<natsfleet::Message>& m) {
//                        return m ? m->stream_seq() : uint64_t{0};
//                      })
//                      .value_or(0);
//   std::cout << "newest order: " << seq << "\n";
template <typename T>
class [[nodiscard]] Result {
 public:
  using value_type = T;

  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design
  Result(Errc e, std::string message = {}) : v_(Error{make_error_code(e), std::move(message)}) {}

  bool ok() const noexcept { return v_.index() == 0; }
  bool has_value() const noexcept { return ok(); }
  explicit operator bool() const noexcept { return ok(); }

  // The value; throws BadResultAccess (carrying the Error) when there is none.
  T& value() & { return checked(*this); }
  const T& value() const& { return checked(*this); }
  T&& value() && { return std::move(checked(*this)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? std::get<0>(v_) : static_cast<T>(std::forward<U>(fallback));
  }
  template <typename U>
  T value_or(U&& fallback) && {
    return ok() ? std::get<0>(std::move(v_)) : static_cast<T>(std::forward<U>(fallback));
  }

  // The Error. Precondition: !ok() (on a success it throws std::logic_error).
  const Error& error() const {
    if (ok()) throw std::logic_error("natsfleet::Result::error() called on a success");
    return std::get<1>(v_);
  }

  // f(value) when there is one: f returns a Result. Else this Error, in f's Result type.
  template <typename F>
  auto and_then(F&& f) const& {
    using R = std::remove_cvref_t<std::invoke_result_t<F, const T&>>;
    static_assert(is_result_v<R>, "and_then: f must return a natsfleet::Result");
    return ok() ? R(std::invoke(std::forward<F>(f), std::get<0>(v_))) : R(std::get<1>(v_));
  }
  template <typename F>
  auto and_then(F&& f) && {
    using R = std::remove_cvref_t<std::invoke_result_t<F, T&&>>;
    static_assert(is_result_v<R>, "and_then: f must return a natsfleet::Result");
    return ok() ? R(std::invoke(std::forward<F>(f), std::get<0>(std::move(v_))))
                : R(std::get<1>(std::move(v_)));
  }
  // f(value) when there is one, as a Result of what f returns (Result<void> for void). Else this
  // Error.
  template <typename F>
  auto transform(F&& f) const& {
    using V = std::remove_cvref_t<std::invoke_result_t<F, const T&>>;
    if (!ok()) return Result<V>(std::get<1>(v_));
    return applied<V>(std::forward<F>(f), std::get<0>(v_));
  }
  template <typename F>
  auto transform(F&& f) && {
    using V = std::remove_cvref_t<std::invoke_result_t<F, T&&>>;
    if (!ok()) return Result<V>(std::get<1>(std::move(v_)));
    return applied<V>(std::forward<F>(f), std::get<0>(std::move(v_)));
  }
  // This value when there is one; else f(error), which returns a Result<T> (a fallback, or
  // another Error).
  template <typename F>
  Result or_else(F&& f) const& {
    return ok() ? *this : Result(std::invoke(std::forward<F>(f), std::get<1>(v_)));
  }
  template <typename F>
  Result or_else(F&& f) && {
    return ok() ? std::move(*this) : Result(std::invoke(std::forward<F>(f), std::get<1>(v_)));
  }

 private:
  template <typename Self>
  static auto& checked(Self& self) {
    if (!self.ok()) throw BadResultAccess(std::get<1>(self.v_));
    return std::get<0>(self.v_);
  }
  template <typename V, typename F, typename Arg>
  static Result<V> applied(F&& f, Arg&& value) {
    if constexpr (std::is_void_v<V>) {
      std::invoke(std::forward<F>(f), std::forward<Arg>(value));
      return Result<V>();
    } else {
      return Result<V>(std::invoke(std::forward<F>(f), std::forward<Arg>(value)));
    }
  }

  std::variant<T, Error> v_;
};

// Result<void>: success or an Error, shaped as std::expected<void, Error>.
template <>
class [[nodiscard]] Result<void> {
 public:
  using value_type = void;

  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design
  Result(Errc e, std::string message = {})
      : error_{make_error_code(e), std::move(message)}, ok_(false) {}

  bool ok() const noexcept { return ok_; }
  bool has_value() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  // Nothing on success; throws BadResultAccess (carrying the Error) otherwise.
  void value() const {
    if (!ok_) throw BadResultAccess(error_);
  }
  // The Error. Precondition: !ok() (on a success it throws std::logic_error).
  const Error& error() const {
    if (ok_) throw std::logic_error("natsfleet::Result::error() called on a success");
    return error_;
  }

  // f() on success: f returns a Result. Else this Error, in f's Result type.
  template <typename F>
  auto and_then(F&& f) const {
    using R = std::remove_cvref_t<std::invoke_result_t<F>>;
    static_assert(is_result_v<R>, "and_then: f must return a natsfleet::Result");
    return ok_ ? R(std::invoke(std::forward<F>(f))) : R(error_);
  }
  // f() on success, as a Result of what f returns. Else this Error.
  template <typename F>
  auto transform(F&& f) const {
    using V = std::remove_cvref_t<std::invoke_result_t<F>>;
    if (!ok_) return Result<V>(error_);
    if constexpr (std::is_void_v<V>) {
      std::invoke(std::forward<F>(f));
      return Result<void>();
    } else {
      return Result<V>(std::invoke(std::forward<F>(f)));
    }
  }
  // Success as it is; else f(error), which returns a Result<void>.
  template <typename F>
  Result or_else(F&& f) const {
    return ok_ ? *this : Result(std::invoke(std::forward<F>(f), error_));
  }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace natsfleet

template <>
struct std::is_error_code_enum<natsfleet::Errc> : std::true_type {};
