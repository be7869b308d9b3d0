// A double-ended queue in one growing array: pushing and popping at either end allocates nothing
// once the array has grown to the most it held. std::deque allocates a block every few elements
// when they are large (a queued message is ~200 bytes: two a block), which a queue on the
// message path pays at every message.
//
//   RingQueue<Item> q;
//   q.push_back(item);
//   while (!q.empty()) use(q.pop_front());
//
// Elements are addressed by position from the front (0 .. size()-1); erase(i) moves the ones
// behind it forward.
#pragma once

#include <cassert>
#include <cstddef>
#include <utility>
#include <vector>

namespace natsfleet::base {

template <typename T>
class RingQueue {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  T& operator[](size_t i) { return slots_[slot(i)]; }
  const T& operator[](size_t i) const { return slots_[slot(i)]; }
  T& front() { return (*this)[0]; }

  void push_back(T value) {
    grow_if_full();
    slots_[slot(size_)] = std::move(value);
    ++size_;
  }

  void push_front(T value) {
    grow_if_full();
    head_ = (head_ + slots_.size() - 1) & mask();
    slots_[head_] = std::move(value);
    ++size_;
  }

  T pop_front() {
    assert(size_ > 0);
    T value = std::move(slots_[head_]);
    head_ = (head_ + 1) & mask();
    --size_;
    return value;
  }

  // Removes the element at position i, keeping the order of the rest; moves the shorter side
  // (erasing the front is pop_front).
  T erase(size_t i) {
    assert(i < size_);
    T value = std::move((*this)[i]);
    if (i < size_ / 2) {
      for (size_t j = i; j > 0; --j) (*this)[j] = std::move((*this)[j - 1]);
      head_ = (head_ + 1) & mask();
    } else {
      for (size_t j = i; j + 1 < size_; ++j) (*this)[j] = std::move((*this)[j + 1]);
    }
    --size_;
    return value;
  }

  // Takes every element out, in order, leaving the queue empty.
  std::vector<T> take_all() {
    std::vector<T> all;
    all.reserve(size_);
    while (size_ > 0) all.push_back(pop_front());
    return all;
  }

 private:
  size_t mask() const { return slots_.size() - 1; }
  size_t slot(size_t i) const { return (head_ + i) & mask(); }

  // Doubles the array (a power of two, so positions wrap with a mask), unwrapping it.
  void grow_if_full() {
    if (size_ < slots_.size()) return;
    std::vector<T> bigger(slots_.empty() ? 8 : slots_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;  // empty, or a power of two long
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace natsfleet::base
