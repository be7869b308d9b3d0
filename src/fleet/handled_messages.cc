#include "fleet/handled_messages.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "base/parse_number.h"

namespace natsfleet::fleet {

std::optional<HandledMessages::Key> HandledMessages::key_of(const Message& message) {
  const auto& delivery = message.delivery();
  if (!delivery || delivery->stream_seq == 0 || delivery->timestamp_ns == 0) return std::nullopt;
  return Key{delivery->stream_seq, delivery->timestamp_ns};
}

void HandledMessages::remember(const Message& message, Handler by, Clock::time_point at) {
  if (auto key = key_of(message)) remember(*key, by, at);
}

void HandledMessages::remember(Key key, Handler by, Clock::time_point at) {
  if (key.seq == 0 || key.stored_ns == 0) return;
  std::lock_guard lock(mu_);
  if (!handled_.emplace(key.stored_ns, Entry{by, at}).second) return;
  order_.push_back(key);
  if (order_.size() > kRemembered) {
    handled_.erase(order_.front().stored_ns);
    order_.pop_front();
  }
}

std::optional<Handler> HandledMessages::find(const Message& message) const {
  const auto key = key_of(message);
  if (!key) return std::nullopt;
  std::lock_guard lock(mu_);
  const auto it = handled_.find(key->stored_ns);
  if (it == handled_.end()) return std::nullopt;
  return it->second.by;
}

std::optional<Handler> HandledMessages::find(Key key) const {
  std::lock_guard lock(mu_);
  const auto it = handled_.find(key.stored_ns);
  if (it == handled_.end()) return std::nullopt;
  return it->second.by;
}

bool HandledMessages::contains(Key key) const {
  std::lock_guard lock(mu_);
  return handled_.count(key.stored_ns) > 0;
}

uint64_t HandledMessages::newest_before(Clock::time_point at) const {
  std::lock_guard lock(mu_);
  uint64_t newest = 0;
  for (const auto& key : order_)
    if (handled_.at(key.stored_ns).at <= at) newest = std::max(newest, key.seq);
  return newest;
}

uint64_t HandledMessages::oldest_since(Clock::time_point at) const {
  std::lock_guard lock(mu_);
  uint64_t oldest = 0;
  for (const auto& key : order_)
    if (handled_.at(key.stored_ns).at >= at && (oldest == 0 || key.seq < oldest)) oldest = key.seq;
  return oldest;
}

uint64_t HandledMessages::newest_below(uint64_t seq) const {
  std::lock_guard lock(mu_);
  uint64_t newest = 0;
  for (const auto& key : order_)
    if (key.seq < seq) newest = std::max(newest, key.seq);
  return newest;
}

std::vector<HandledMessages::Key> HandledMessages::keys() const {
  std::lock_guard lock(mu_);
  return {order_.begin(), order_.end()};
}

uint64_t HandledMessages::oldest() const {
  std::lock_guard lock(mu_);
  uint64_t oldest = 0;
  for (const auto& key : order_)
    if (oldest == 0 || key.seq < oldest) oldest = key.seq;
  return oldest;
}

Result<std::vector<Message>> passed_over(uint64_t after, uint64_t seq,
                                         const NextStored& next_stored,
                                         const std::function<bool(const Message&)>& handled,
                                         int limit) {
  std::vector<Message> missed;
  for (int lookups = 0; after + 1 < seq && lookups < limit; ++lookups) {
    auto next = next_stored(after);
    if (!next) return next.error();
    if (!next->has_value() || (*next)->stream_seq() >= seq) break;
    if (!HandledMessages::key_of(**next)) break;  // no stored time: cannot be told apart
    after = (*next)->stream_seq();
    if (!handled(**next)) missed.push_back(std::move(**next));
  }
  return missed;
}

bool KeyProgress::operator()(const Message& m) {
  if (!handled_(m)) return false;
  uint64_t& newest = newest_handled_[m.subject()];
  newest = std::max(newest, m.stream_seq());
  return true;
}

std::vector<Message> KeyProgress::take_moved_on(std::vector<Message>& unknown) const {
  const auto stays = std::stable_partition(unknown.begin(), unknown.end(), [&](const Message& m) {
    const auto later = newest_handled_.find(m.subject());
    return later == newest_handled_.end() || later->second < m.stream_seq();
  });
  std::vector<Message> taken(std::make_move_iterator(stays),
                             std::make_move_iterator(unknown.end()));
  unknown.erase(stays, unknown.end());
  return taken;
}

void HandOffs::add(HandledMessages::Key key) {
  std::lock_guard lock(mu_);
  if (counts_[key.stored_ns]++ > 0) return;
  order_.push_back(key.stored_ns);
  if (order_.size() > kRemembered) {
    counts_.erase(order_.front());
    order_.pop_front();
  }
}

uint64_t HandOffs::count(HandledMessages::Key key) const {
  std::lock_guard lock(mu_);
  const auto it = counts_.find(key.stored_ns);
  return it == counts_.end() ? 0 : it->second;
}

std::string hand_off_notice(uint64_t replica, int partition, HandledMessages::Key key) {
  return fmt::format("{} {}", replica, handled_notice(partition, key));
}

bool parse_hand_off_notice(std::string_view text, uint64_t& replica, int& partition,
                           HandledMessages::Key& key) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return false;
  const auto from = base::parse_number<uint64_t>(text.substr(0, space));
  if (!from || !parse_handled_notice(text.substr(space + 1), partition, key)) return false;
  replica = *from;
  return true;
}

std::string handled_notice(int partition, HandledMessages::Key key) {
  return fmt::format("{} {} {}", partition, key.seq, key.stored_ns);
}

bool parse_handled_notice(std::string_view text, int& partition, HandledMessages::Key& key) {
  const size_t first = text.find(' ');
  if (first == std::string_view::npos) return false;
  const size_t second = text.find(' ', first + 1);
  if (second == std::string_view::npos) return false;
  const auto p = base::parse_number<int>(text.substr(0, first));
  const auto seq = base::parse_number<uint64_t>(text.substr(first + 1, second - first - 1));
  const auto stored = base::parse_number<int64_t>(text.substr(second + 1));
  if (!p || !seq || !stored || *p < 0 || *seq == 0 || *stored <= 0) return false;
  partition = *p;
  key = HandledMessages::Key{*seq, *stored};
  return true;
}

std::string handled_question(int partition, const std::vector<int64_t>& stored_ns) {
  std::string text = std::to_string(partition);
  for (int64_t ns : stored_ns) fmt::format_to(std::back_inserter(text), " {}", ns);
  return text;
}

std::string catch_up_question(int partition) { return std::to_string(partition) + " all"; }

bool is_catch_up_question(std::string_view text) { return text.ends_with(" all"); }

std::string catch_up_answer(int partition, const std::vector<HandledMessages::Key>& keys) {
  std::string text = std::to_string(partition);
  for (const auto& key : keys)
    fmt::format_to(std::back_inserter(text), " {} {}", key.seq, key.stored_ns);
  return text;
}

bool parse_catch_up_answer(std::string_view text, int& partition,
                           std::vector<HandledMessages::Key>& keys) {
  const auto numbers = parse_number_list(text);
  if (!numbers || numbers->size() % 2 != 1 || numbers->front() < 0) return false;
  partition = static_cast<int>(numbers->front());
  keys.clear();
  for (size_t i = 1; i + 1 < numbers->size(); i += 2) {
    if ((*numbers)[i] <= 0 || (*numbers)[i + 1] <= 0) return false;
    keys.push_back({static_cast<uint64_t>((*numbers)[i]), (*numbers)[i + 1]});
  }
  return true;
}

std::optional<std::vector<int64_t>> parse_number_list(std::string_view text) {
  std::vector<int64_t> numbers;
  while (!text.empty()) {
    const size_t space = std::min(text.find(' '), text.size());
    const auto n = base::parse_number<int64_t>(text.substr(0, space));
    if (!n) return std::nullopt;
    numbers.push_back(*n);
    text.remove_prefix(std::min(space + 1, text.size()));
  }
  return numbers;
}

Repeat is_repeat(const HandledMessages& handled, uint64_t handled_to, const Message& message) {
  if (auto by = handled.find(message))
    return *by == Handler::here ? Repeat::handled_here : Repeat::handled_elsewhere;
  const uint64_t seq = message.stream_seq();
  if (seq != 0 && message.delivered() > 1 && seq <= handled_to) return Repeat::settled_before;
  return Repeat::no;
}

}  // namespace natsfleet::fleet
