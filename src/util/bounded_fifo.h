// A first-in first-out ring with a capacity fixed at construction: push fails when full rather
// than growing past it, so every queue in the engine has a limit. The storage starts at 64
// entries (or the capacity if smaller) and doubles when a push needs room, so a queue that stays
// short never touches the memory of its whole capacity (a host has ~1000 QPs, each with several
// queues). Used for control packets, retransmissions, the transmission order, posted receives
// and completion queues.
#pragma once

#include <cstddef>
#include <vector>

#include "mrc/assert.hpp"

namespace mrc {

template <typename T>
class BoundedFifo {
 public:
  explicit BoundedFifo(size_t capacity)
      : ring_(capacity < kInitialEntries ? capacity : kInitialEntries), capacity_(capacity) {
    MRC_ASSERT(capacity > 0);
  }

  bool push(const T& value) {
    if (count_ == capacity_) return false;
    if (count_ == ring_.size()) grow();
    ring_[(head_ + count_) % ring_.size()] = value;
    ++count_;
    return true;
  }
  const T& front() const {
    MRC_ASSERT(count_ > 0);
    return ring_[head_];
  }
  // A queue that empties starts again at its first entry, so a queue that holds one or two
  // entries at a time (most completion and control queues) keeps reusing one cache line
  // instead of walking its whole ring, a cold line at each push.
  void pop() {
    MRC_ASSERT(count_ > 0);
    head_ = --count_ == 0 ? 0 : (head_ + 1) % ring_.size();
  }
  void clear() { head_ = count_ = 0; }
  bool empty() const { return count_ == 0; }
  bool full() const { return count_ == capacity_; }
  size_t size() const { return count_; }
  size_t capacity() const { return capacity_; }

 private:
  static constexpr size_t kInitialEntries = 64;

  // Doubles the storage (at most to the capacity), the oldest entry moving to index 0.
  void grow() {
    const size_t size = ring_.size() * 2 < capacity_ ? ring_.size() * 2 : capacity_;
    std::vector<T> bigger(size);
    for (size_t i = 0; i < count_; ++i) bigger[i] = ring_[(head_ + i) % ring_.size()];
    ring_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<T> ring_;
  size_t capacity_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace mrc
