// Send window ring and retransmit FIFO; see send_window.h.
#include "core/send_window.h"

#include "mrc/assert.hpp"

namespace mrc {

namespace {
constexpr uint32_t kInitialRecords = 64;
}  // namespace

SendWindow::SendWindow(uint32_t capacity_psns) : capacity_(capacity_psns) {
  MRC_ASSERT(capacity_psns >= 1 && capacity_psns <= (1u << 16));
  ring_.resize(kInitialRecords);
  mask_ = kInitialRecords - 1;
}

void SendWindow::reset(Psn initial) {
  oldest_ = next_ = initial;
  MRC_ASSERT(outstanding() == 0 && !contains(initial));
}

SentPacket& SendWindow::push() {
  MRC_ASSERT(outstanding() < capacity_);
  if (outstanding() == ring_.size()) grow();
  // The ring holds every live record: the new one does not overwrite [oldest, next).
  MRC_ASSERT(outstanding() < ring_.size());
  SentPacket& p = ring_[next_.value & mask_];
  p = SentPacket{};
  next_ += 1;
  MRC_ASSERT(outstanding() >= 1 && outstanding() <= capacity_);
  return p;
}

// Doubles the ring, moving the live records [oldest, next) to their slots under the new mask.
// Capacities are at most 2^16 and 2^24 is a multiple of every ring size, so PSN wrap-around
// keeps the indexing exact.
void SendWindow::grow() {
  const size_t size = ring_.size() * 2;
  // Never beyond the window (rounded up to a power of two, as the PSN indexing needs).
  MRC_ASSERT(size <= 2 * size_t{capacity_} && (size & (size - 1)) == 0);
  std::vector<SentPacket> bigger(size);
  const uint32_t mask = static_cast<uint32_t>(size) - 1;
  for (Psn psn = oldest_; psn != next_; psn += 1)
    bigger[psn.value & mask] = ring_[psn.value & mask_];
  ring_ = std::move(bigger);
  mask_ = mask;
}

uint32_t SendWindow::advance_oldest_to(Psn psn) {
  MRC_ASSERT(psn.since(oldest_) >= 0 && next_.since(psn) >= 0);
  const uint32_t n = static_cast<uint32_t>(psn.since(oldest_));
  oldest_ = psn;
  // The front only moves forward, and never past the next PSN to send.
  MRC_ASSERT(n <= capacity_ && outstanding() <= capacity_);
  return n;
}

}  // namespace mrc
