// A first-in first-out ring with a capacity fixed at construction: push fails when full rather
// than growing, so every queue in the engine has a limit. Used for control packets,
// retransmissions, the transmission order, posted receives and completion queues.
#pragma once

#include <cstddef>
#include <vector>

#include "util/assert.h"

namespace mrc {

template <typename T>
class BoundedFifo {
 public:
  explicit BoundedFifo(size_t capacity) : ring_(capacity) { MRC_ASSERT(capacity > 0); }

  bool push(const T& value) {
    if (count_ == ring_.size()) return false;
    ring_[(head_ + count_) % ring_.size()] = value;
    ++count_;
    return true;
  }
  const T& front() const {
    MRC_ASSERT(count_ > 0);
    return ring_[head_];
  }
  void pop() {
    MRC_ASSERT(count_ > 0);
    head_ = (head_ + 1) % ring_.size();
    --count_;
  }
  void clear() { head_ = count_ = 0; }
  bool empty() const { return count_ == 0; }
  bool full() const { return count_ == ring_.size(); }
  size_t size() const { return count_; }
  size_t capacity() const { return ring_.size(); }

 private:
  std::vector<T> ring_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace mrc
