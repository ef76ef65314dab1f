// A set of small integers in [0, capacity) kept as a two-level bit map: insert and contains are
// O(1), and draining the set visits its members in ascending order at one step per member plus
// one word per 4096 indices of capacity, which is the order sorting the inserted indices would
// give, without the sort (the simulator's polls visit the hosts and flows that changed in
// index order so that a run does not depend on the order events happened to touch them).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "mrc/assert.hpp"

namespace mrc {

class IndexSet {
 public:
  // Empties the set and sets its capacity.
  void reset(size_t capacity) {
    words_.assign((capacity + 63) / 64, 0);
    summary_.assign((words_.size() + 63) / 64, 0);
    capacity_ = capacity;
    size_ = 0;
  }
  size_t capacity() const { return capacity_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  bool contains(uint32_t i) const { return i < capacity_ && (words_[i >> 6] >> (i & 63) & 1) != 0; }
  // Adds `i` (< capacity); returns false if it was already there.
  bool insert(uint32_t i) {
    MRC_ASSERT(i < capacity_);
    uint64_t& word = words_[i >> 6];
    const uint64_t bit = uint64_t{1} << (i & 63);
    if ((word & bit) != 0) return false;
    word |= bit;
    summary_[i >> 12] |= uint64_t{1} << ((i >> 6) & 63);
    ++size_;
    return true;
  }
  void swap(IndexSet& other) {
    words_.swap(other.words_);
    summary_.swap(other.summary_);
    std::swap(capacity_, other.capacity_);
    std::swap(size_, other.size_);
  }
  // Calls visit(i) for every member in ascending order, leaving the set empty. `visit` must not
  // insert into this set (swap it with an empty one first and drain that).
  template <typename Visit>
  void drain(Visit&& visit) {
    for (size_t s = 0; s < summary_.size() && size_ != 0; ++s) {
      for (uint64_t words = std::exchange(summary_[s], 0); words != 0; words &= words - 1) {
        const size_t w = s * 64 + static_cast<size_t>(std::countr_zero(words));
        for (uint64_t bits = std::exchange(words_[w], 0); bits != 0; bits &= bits - 1) {
          --size_;
          visit(static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits))));
        }
      }
    }
  }

 private:
  std::vector<uint64_t> words_;    // bit i % 64 of word i / 64: i is a member
  std::vector<uint64_t> summary_;  // bit w % 64 of word w / 64: words_[w] is not zero
  size_t capacity_ = 0;
  size_t size_ = 0;
};

}  // namespace mrc
