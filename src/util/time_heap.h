// A min-heap of small integer ids (an endpoint's queue pairs, a host's connections) keyed by a
// time per id, that knows where each id sits: changing an id's time moves its one entry up or
// down in place, so the heap never holds more entries than ids and never holds stale ones.
// Ties go to the lower id.
// Each entry holds its id's time (an id without a time has no entry).
#pragma once

#include <cstddef>
#include <cstdint>

#include "mrc/types.hpp"  // Instant
#include "util/small_vector.h"

namespace mrc {

class TimeHeap {
 public:
  // Ids [0, count) exist; ids added start with no time.
  void resize(uint32_t count);
  // Sets an id's time; Instant::never() takes the id out of the heap.
  void set(uint32_t id, Instant at);
  Instant at(uint32_t id) const {
    return pos_[id] == kAbsent ? Instant::never() : heap_[pos_[id]].at;
  }

  bool empty() const { return heap_.empty(); }
  uint32_t top() const { return heap_.front().id; }
  Instant top_at() const { return heap_.front().at; }

 private:
  static constexpr uint32_t kAbsent = UINT32_MAX;
  // An entry carries its time, so the top and a sift read the heap's own lines only.
  struct Entry {
    Instant at;
    uint32_t id;
  };
  static bool less(const Entry& a, const Entry& b) {
    return a.at != b.at ? a.at < b.at : a.id < b.id;
  }
  void place(std::size_t position, const Entry& entry);
  void sift_up(std::size_t position);
  void sift_down(std::size_t position);

  // Inline up to kInline ids (an endpoint with a few QPs needs no allocation).
  static constexpr uint32_t kInline = 4;
  SmallVector<Entry, kInline> heap_;
  SmallVector<uint32_t, kInline> pos_;  // per id: index in heap_, or kAbsent (no time)
};

}  // namespace mrc
