// A min-heap of small integer ids (queue pairs of an endpoint) keyed by a time per id, that
// knows where each id sits: changing an id's time moves its one entry up or down in place, so
// the heap never holds more entries than ids and never holds stale ones. Ties go to the lower id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/types.h"

namespace mrc {

class TimeHeap {
 public:
  // Ids [0, count) exist; ids added start with no time.
  void resize(uint32_t count);
  // Sets an id's time; never removes it from the heap.
  void set(uint32_t id, Instant at);
  Instant at(uint32_t id) const { return at_[id]; }

  bool empty() const { return heap_.empty(); }
  uint32_t top() const { return heap_.front(); }
  Instant top_at() const { return at_[heap_.front()]; }

 private:
  static constexpr uint32_t kAbsent = UINT32_MAX;
  bool less(uint32_t a, uint32_t b) const { return at_[a] != at_[b] ? at_[a] < at_[b] : a < b; }
  void place(std::size_t position, uint32_t id);
  void sift_up(std::size_t position);
  void sift_down(std::size_t position);

  std::vector<uint32_t> heap_;  // ids
  std::vector<uint32_t> pos_;   // per id: index in heap_, or kAbsent
  std::vector<Instant> at_;     // per id: its time (never when absent)
};

}  // namespace mrc
