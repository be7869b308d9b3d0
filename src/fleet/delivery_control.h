// What stands behind natsfleet::DeliveryControl, the handle a Message keeps so that its
// in_progress() and its verdict (Message::settle) reach the broker and its stop_token() sees its
// subscription stop. The public header only names the type.
//
// A work message gets a control of its own (its verdict is given once, possibly after its
// handler returned); ordered work's and broadcasts' messages share one per subscription, which
// takes no verdict. Every control reaches its subscription through a DeliveryLink, which the
// subscription detaches when it goes: calls on a kept copy fail from then on, never touch freed
// state.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stop_token>
#include <string>

#include "natsfleet/error.h"
#include "natsfleet/message.h"

namespace natsfleet {
class DeliveryControl;
}

namespace natsfleet::fleet {

class Transport;

// Where a deferred verdict goes (the delivery pipeline).
class Settler {
 public:
  virtual ~Settler() = default;
  // The verdict of `delivery`, whose handler returned Disposition::later(): carried out as a
  // handler's return would be. Any thread.
  virtual Result<void> settle_deferred(const DeliveryControl& delivery, Disposition verdict) = 0;
};

// A subscription's side of its messages' controls. Any thread, for as long as a control lives.
class DeliveryLink {
 public:
  // `transport` null: in_progress() does nothing (ordered work and core broadcasts keep their
  // messages alive otherwise). `settler` null: no verdict is taken.
  DeliveryLink(Transport* transport, Settler* settler) : transport_(transport), settler_(settler) {}

  // Errors: shutting_down once detached; the transport's own when it could not be sent.
  Result<void> in_progress(const std::string& reply);
  Result<void> settle(const DeliveryControl& delivery, Disposition verdict);
  std::stop_token stop_token() const { return stop_.get_token(); }
  // Requested once the subscription begins to stop; never withdrawn.
  void request_stop() { stop_.request_stop(); }
  // The subscription goes: every later call fails and the stop is requested. Waits for calls
  // under way.
  void detach();

 private:
  std::shared_mutex mu_;
  bool detached_ = false;
  Transport* transport_;
  Settler* settler_;
  std::stop_source stop_;
};

}  // namespace natsfleet::fleet

namespace natsfleet {

class DeliveryControl {
 public:
  // What the pipeline does once a handler returned (handler_returned).
  struct Next {
    enum class Step { carry_out, wait, taken };
    Step step = Step::carry_out;
    std::optional<Disposition> verdict;  // for carry_out: the first verdict given
  };

  // A work message's own control: it takes one verdict.
  explicit DeliveryControl(std::shared_ptr<fleet::DeliveryLink> link)
      : link_(std::move(link)), settleable_(true) {}
  // One shared by a subscription's messages, which takes no verdict.
  explicit DeliveryControl(fleet::Transport* transport)
      : link_(std::make_shared<fleet::DeliveryLink>(transport, nullptr)), settleable_(false) {}

  Result<void> in_progress(const std::string& reply) { return link_->in_progress(reply); }
  std::stop_token stop_token() const { return link_->stop_token(); }
  void request_stop() { link_->request_stop(); }
  void detach() { link_->detach(); }

  // Message::settle. While the handler runs the verdict is kept for handler_returned(); after it
  // returned later() the verdict goes to the link's settler.
  Result<void> settle(Disposition verdict);

  // The pipeline, once the handler returned `returned`: carry out the first verdict given (one
  // given through settle() meanwhile wins); wait for settle() (later() returned, none given);
  // or nothing, when close() took the message meanwhile.
  Next handler_returned(Disposition returned);
  // The pipeline gives the message back (shutting_down) or lets it lapse (timeout): a settle()
  // from now fails with `why`. False when a verdict was given first (its settle is under way).
  bool close(Errc why);

  // Whether the application holds the message (true from the start): a pull work's message
  // waiting to be fetched is not held, so a stopping subscription gives it back without waiting
  // for its verdict.
  bool with_application() const { return with_application_.load(std::memory_order_acquire); }
  void set_with_application(bool held) { with_application_.store(held, std::memory_order_release); }
  // A pull work's fetch hands the message to the application: false when it was given back
  // meanwhile (close_unheld), and the fetch skips it.
  bool take_for_application();
  // Gives back a message the application does not hold (waiting to be fetched): a settle() from
  // now fails with `why`. False when the application holds it, or a verdict came first.
  bool close_unheld(Errc why);

 private:
  enum class State { handling, settled_early, deferred, done };

  const std::shared_ptr<fleet::DeliveryLink> link_;
  const bool settleable_;
  std::mutex mu_;
  State state_ = State::handling;
  Errc closed_ = Errc::already_settled;  // what a settle() after done answers
  std::optional<Disposition> early_;     // given while the handler ran
  std::atomic<bool> with_application_{true};
};

}  // namespace natsfleet
