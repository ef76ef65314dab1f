// Schedule (see schedule.h): a dirty list, position-indexed time heaps (one entry per item at
// most, so memory is bounded by the item count) and per-lane ready bit sets, scanned a word at
// a time: finding the next ready item costs n/64 words at worst.
#include "util/schedule.h"

#include <algorithm>
#include <bit>

#include "mrc/assert.hpp"

namespace mrc {

Schedule::Schedule(uint32_t lanes) : reading_(lanes), lanes_(lanes) {
  MRC_ASSERT(lanes >= 1);
}

void Schedule::add() {
  const uint32_t index = count_++;
  dirty_flag_.push_back(0);
  deadlines_.resize(count_);
  for (Lane& lane : lanes_) {
    lane.ready.resize((count_ + 63) / 64, 0);
    lane.wakes.resize(count_);
  }
  touch(index);
}

void Schedule::set_ready(Lane& lane, uint32_t index, bool ready) {
  uint64_t& word = lane.ready[index / 64];
  const uint64_t bit = uint64_t{1} << (index % 64);
  word = ready ? (word | bit) : (word & ~bit);
}

void Schedule::store(uint32_t index, Instant deadline) {
  MRC_DASSERT(index < count_);
  deadlines_.set(index, deadline);
  for (size_t l = 0; l < lanes_.size(); ++l) {
    const Instant at = reading_[l];
    set_ready(lanes_[l], index, at == kReadyNow);
    lanes_[l].wakes.set(index, at == kReadyNow ? Instant::never() : at);
  }
}

void Schedule::promote(Instant now) {
  for (Lane& lane : lanes_) {
    while (!lane.wakes.empty() && lane.wakes.top_at() <= now) {
      const uint32_t index = lane.wakes.top();
      lane.wakes.set(index, Instant::never());  // queued again when the item is next read
      set_ready(lane, index, true);
    }
    MRC_DASSERT(lane.wakes.empty() || lane.wakes.top_at() > now);
  }
}

uint32_t Schedule::next_ready(uint32_t lane, uint32_t from, uint32_t to) const {
  if (from >= to) return to;
  const std::vector<uint64_t>& bits = lanes_[lane].ready;
  uint32_t w = from / 64;
  uint64_t word = bits[w] & (~uint64_t{0} << (from % 64));
  while (word == 0) {
    if (++w * 64 >= to) return to;
    word = bits[w];
  }
  return std::min(to, w * 64 + static_cast<uint32_t>(std::countr_zero(word)));
}

void Schedule::ready_in_turn(uint32_t lane, uint32_t from, std::vector<uint32_t>& out) const {
  if (count_ == 0) return;
  from %= count_;
  for (uint32_t i = next_ready(lane, from, count_); i < count_; i = next_ready(lane, i + 1, count_))
    out.push_back(i);
  for (uint32_t i = next_ready(lane, 0, from); i < from; i = next_ready(lane, i + 1, from))
    out.push_back(i);
}

void Schedule::due(Instant now, std::vector<uint32_t>& out) {
  const size_t first = out.size();
  while (!deadlines_.empty() && deadlines_.top_at() <= now) {
    const uint32_t index = deadlines_.top();
    deadlines_.set(index, Instant::never());  // read (and queued) again after its timer runs
    touch(index);
    out.push_back(index);
  }
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

}  // namespace mrc
