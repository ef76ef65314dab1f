// TimeHeap (see time_heap.h): a binary heap over ids with a position table.
#include "util/time_heap.h"

#include <cstddef>

#include "mrc/assert.hpp"

namespace mrc {

void TimeHeap::resize(uint32_t count) {
  MRC_ASSERT(count >= pos_.size());
  pos_.resize(count, kAbsent);
}

void TimeHeap::place(std::size_t position, const Entry& entry) {
  heap_[position] = entry;
  pos_[entry.id] = static_cast<uint32_t>(position);
}

void TimeHeap::sift_up(std::size_t position) {
  const Entry entry = heap_[position];
  while (position > 0) {
    const std::size_t parent = (position - 1) / 2;
    if (!less(entry, heap_[parent])) break;
    place(position, heap_[parent]);
    position = parent;
  }
  place(position, entry);
}

void TimeHeap::sift_down(std::size_t position) {
  const Entry entry = heap_[position];
  const std::size_t n = heap_.size();
  for (;;) {
    std::size_t child = 2 * position + 1;
    if (child >= n) break;
    if (child + 1 < n && less(heap_[child + 1], heap_[child])) ++child;
    if (!less(heap_[child], entry)) break;
    place(position, heap_[child]);
    position = child;
  }
  place(position, entry);
}

void TimeHeap::set(uint32_t id, Instant at) {
  const uint32_t position = pos_[id];
  if (position == kAbsent) {
    if (at.is_never()) return;
    heap_.push_back(Entry{at, id});
    pos_[id] = static_cast<uint32_t>(heap_.size() - 1);
    sift_up(heap_.size() - 1);
    return;
  }
  const Instant old = heap_[position].at;
  if (at == old) return;
  if (at.is_never()) {  // remove: the last entry fills the hole
    const Entry last = heap_.back();
    heap_.pop_back();
    pos_[id] = kAbsent;
    if (last.id == id) return;
    place(position, last);
    sift_down(position);
    sift_up(pos_[last.id]);
    return;
  }
  heap_[position].at = at;
  if (at < old) {
    sift_up(position);
  } else {
    sift_down(position);
  }
}

}  // namespace mrc
