// The anti-replay window (see replay_window.h).
#include "core/replay_window.h"

#include "mrc/assert.hpp"

namespace mrc {

bool ReplayWindow::seen(uint64_t counter) const {
  const uint64_t bit = counter % kPackets;
  return ((bits_[bit / 64] >> (bit % 64)) & 1) != 0;
}

bool ReplayWindow::fresh(uint64_t counter) const {
  if (!any_ || counter > highest_) return true;
  if (highest_ - counter >= kPackets) return false;
  return !seen(counter);
}

// Moving the top forward forgets the counters that fall out of the window, so their bits can
// stand for the new ones.
void ReplayWindow::accept(uint64_t counter) {
  MRC_ASSERT(fresh(counter));
  if (!any_ || counter > highest_) {
    const uint64_t from = any_ ? highest_ + 1 : counter;
    if (counter - from >= kPackets) {
      bits_.fill(0);
    } else {
      for (uint64_t c = from; c <= counter; ++c) {
        const uint64_t bit = c % kPackets;
        bits_[bit / 64] &= ~(uint64_t{1} << (bit % 64));
      }
    }
    highest_ = counter;
    any_ = true;
  }
  const uint64_t bit = counter % kPackets;
  bits_[bit / 64] |= uint64_t{1} << (bit % 64);
  // Accepted once: the same counter is never fresh again.
  MRC_ASSERT(any_ && counter <= highest_ && !fresh(counter));
}

}  // namespace mrc
