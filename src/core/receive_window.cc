// Receive window bit ring; see receive_window.h.
#include "core/receive_window.h"

#include <algorithm>

#include "mrc/assert.hpp"

namespace mrc {

namespace {
uint32_t round_up_pow2(uint32_t v) {
  uint32_t p = 64;
  while (p < v) p <<= 1;
  return p;
}
}  // namespace

ReceiveWindow::ReceiveWindow(uint32_t capacity_psns, Psn initial)
    : bits_(round_up_pow2(capacity_psns) / 64),
      ring_mask_(round_up_pow2(capacity_psns) - 1),
      capacity_(capacity_psns),
      cumulative_(initial) {
  MRC_ASSERT(capacity_psns >= 1 && capacity_psns <= (1u << 16));
}

void ReceiveWindow::reset(Psn initial) {
  for (uint64_t& w : bits_) w = 0;
  cumulative_ = initial;
  out_of_order_ = 0;
  MRC_DASSERT(std::all_of(bits_.begin(), bits_.end(), [](uint64_t w) { return w == 0; }));
}

bool ReceiveWindow::test(Psn psn) const {
  const uint32_t i = psn.value & ring_mask_;
  return (bits_[i >> 6] >> (i & 63)) & 1;
}

ReceiveWindow::Verdict ReceiveWindow::classify(Psn psn) const {
  const int32_t d = psn.since(cumulative_);
  if (d < 0) return Verdict::kDuplicate;
  if (static_cast<uint32_t>(d) >= capacity_) return Verdict::kOutOfWindow;
  // No bit is set while nothing is out of order: in-order arrivals never read the ring.
  return out_of_order_ > 0 && test(psn) ? Verdict::kDuplicate : Verdict::kNew;
}

void ReceiveWindow::mark(Psn psn) {
  MRC_ASSERT(classify(psn) == Verdict::kNew);
  if (psn != cumulative_) {
    const uint32_t i = psn.value & ring_mask_;
    bits_[i >> 6] |= uint64_t{1} << (i & 63);
    ++out_of_order_;
    // Every bit set stands for a distinct PSN of (cumulative, cumulative + capacity).
    MRC_ASSERT(out_of_order_ < capacity_);
    return;
  }
  const Psn before = cumulative_;
  cumulative_ += 1;
  // Absorb the contiguous run that was waiting above the old cumulative PSN.
  while (out_of_order_ > 0 && test(cumulative_)) {
    const uint32_t i = cumulative_.value & ring_mask_;
    bits_[i >> 6] &= ~(uint64_t{1} << (i & 63));
    --out_of_order_;
    cumulative_ += 1;
  }
  // The ring holds only what lies above the cumulative point, inside the window.
  MRC_DASSERT(out_of_order_ < capacity_);
  MRC_DASSERT(out_of_order_ == 0 || !test(cumulative_));
  // The cumulative point moved forward, by at most the window (it absorbed only set bits).
  MRC_ASSERT(cumulative_.since(before) >= 1 &&
             static_cast<uint32_t>(cumulative_.since(before)) <= capacity_);
  MRC_ASSERT(psn.before(cumulative_));
}

uint64_t ReceiveWindow::bitmap(Psn base) const {
  // PSNs before the cumulative point count as received; the ring holds the rest of the window
  // (bits behind the cumulative point are kept clear); past the window nothing is received.
  const int32_t below = cumulative_.since(base);  // how many of the 64 are before cumulative
  if (below >= 64) return ~uint64_t{0};
  const uint32_t first = below > 0 ? static_cast<uint32_t>(below) : 0;
  const uint64_t received_below =
      first == 0 ? 0 : (first >= 64 ? ~uint64_t{0} : (uint64_t{1} << first) - 1);
  if (out_of_order_ == 0) return received_below;  // the ring is all clear: no need to read it
  const uint32_t start = (base.value + first) & ring_mask_;
  const uint32_t shift = start & 63;
  const size_t word = start >> 6;
  uint64_t ring = bits_[word] >> shift;
  if (shift != 0) ring |= bits_[(word + 1) % bits_.size()] << (64 - shift);
  MRC_ASSERT(first < 64 && word < bits_.size());
  ring <<= first;  // bit i of `ring` is PSN base + i for i >= first
  const int64_t window_end = static_cast<int64_t>(below) + capacity_;  // in bit positions
  if (window_end < 64) ring &= window_end <= 0 ? 0 : (uint64_t{1} << window_end) - 1;
  return ring | received_below;
}

}  // namespace mrc
