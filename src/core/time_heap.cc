// TimeHeap (see time_heap.h): a binary heap over ids with a position table.
#include "core/time_heap.h"

#include <cstddef>

#include "util/assert.h"

namespace mrc {

void TimeHeap::resize(uint32_t count) {
  MRC_ASSERT(count >= pos_.size());
  pos_.resize(count, kAbsent);
  at_.resize(count, Instant::never());
}

void TimeHeap::place(std::size_t position, uint32_t id) {
  heap_[position] = id;
  pos_[id] = static_cast<uint32_t>(position);
}

void TimeHeap::sift_up(std::size_t position) {
  const uint32_t id = heap_[position];
  while (position > 0) {
    const std::size_t parent = (position - 1) / 2;
    if (!less(id, heap_[parent])) break;
    place(position, heap_[parent]);
    position = parent;
  }
  place(position, id);
}

void TimeHeap::sift_down(std::size_t position) {
  const uint32_t id = heap_[position];
  const std::size_t n = heap_.size();
  for (;;) {
    std::size_t child = 2 * position + 1;
    if (child >= n) break;
    if (child + 1 < n && less(heap_[child + 1], heap_[child])) ++child;
    if (!less(heap_[child], id)) break;
    place(position, heap_[child]);
    position = child;
  }
  place(position, id);
}

void TimeHeap::set(uint32_t id, Instant at) {
  const Instant old = at_[id];
  if (at == old) return;
  at_[id] = at;
  const uint32_t position = pos_[id];
  if (at.is_never()) {  // remove: the last entry fills the hole
    const uint32_t last = heap_.back();
    heap_.pop_back();
    pos_[id] = kAbsent;
    if (last == id) return;
    place(position, last);
    sift_down(position);
    sift_up(pos_[last]);
    return;
  }
  if (position == kAbsent) {
    heap_.push_back(id);
    pos_[id] = static_cast<uint32_t>(heap_.size() - 1);
    sift_up(heap_.size() - 1);
  } else if (at < old) {
    sift_up(position);
  } else {
    sift_down(position);
  }
}

}  // namespace mrc
