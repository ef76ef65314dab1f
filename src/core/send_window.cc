// Send window ring and retransmit FIFO; see send_window.h.
#include "core/send_window.h"

#include "util/assert.h"

namespace mrc {

SendWindow::SendWindow(uint32_t capacity_psns) : capacity_(capacity_psns) {
  uint32_t size = 64;
  while (size < capacity_psns) size <<= 1;
  ring_.resize(size);
  mask_ = size - 1;
  MRC_ASSERT(capacity_psns >= 1 && capacity_psns <= (1u << 16));
}

void SendWindow::reset(Psn initial) {
  oldest_ = next_ = initial;
}

SentPacket& SendWindow::push() {
  MRC_ASSERT(outstanding() < capacity_);
  SentPacket& p = ring_[next_.value & mask_];
  p = SentPacket{};
  next_ += 1;
  return p;
}

uint32_t SendWindow::advance_oldest_to(Psn psn) {
  MRC_ASSERT(psn.since(oldest_) >= 0 && next_.since(psn) >= 0);
  const uint32_t n = static_cast<uint32_t>(psn.since(oldest_));
  oldest_ = psn;
  return n;
}

}  // namespace mrc
