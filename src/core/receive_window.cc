// Receive window bit ring; see receive_window.h.
#include "core/receive_window.h"

#include "util/assert.h"

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
}

bool ReceiveWindow::test(Psn psn) const {
  const uint32_t i = psn.value & ring_mask_;
  return (bits_[i >> 6] >> (i & 63)) & 1;
}

ReceiveWindow::Verdict ReceiveWindow::classify(Psn psn) const {
  const int32_t d = psn.since(cumulative_);
  if (d < 0) return Verdict::kDuplicate;
  if (static_cast<uint32_t>(d) >= capacity_) return Verdict::kOutOfWindow;
  return test(psn) ? Verdict::kDuplicate : Verdict::kNew;
}

void ReceiveWindow::mark(Psn psn) {
  MRC_ASSERT(classify(psn) == Verdict::kNew);
  if (psn != cumulative_) {
    const uint32_t i = psn.value & ring_mask_;
    bits_[i >> 6] |= uint64_t{1} << (i & 63);
    ++out_of_order_;
    return;
  }
  cumulative_ += 1;
  // Absorb the contiguous run that was waiting above the old cumulative PSN.
  while (out_of_order_ > 0 && test(cumulative_)) {
    const uint32_t i = cumulative_.value & ring_mask_;
    bits_[i >> 6] &= ~(uint64_t{1} << (i & 63));
    --out_of_order_;
    cumulative_ += 1;
  }
}

uint64_t ReceiveWindow::bitmap(Psn base) const {
  uint64_t out = 0;
  for (uint32_t i = 0; i < 64; ++i) {
    const Psn psn = base + i;
    const int32_t d = psn.since(cumulative_);
    const bool received = d < 0 || (static_cast<uint32_t>(d) < capacity_ && test(psn));
    out |= static_cast<uint64_t>(received) << i;
  }
  return out;
}

}  // namespace mrc
