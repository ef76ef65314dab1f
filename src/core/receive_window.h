// The responder's PSN window (OCP "MPR"): which PSNs in [cumulative, cumulative + capacity) have
// arrived. Packets are placed in any order; the cumulative PSN advances over the contiguous
// prefix. A PSN behind the cumulative point is a duplicate; one at or beyond the window's end is
// out of window. Bits live in a power-of-two ring indexed by the PSN itself, which is exact
// because 2^24 is a multiple of the ring size and the window never exceeds the ring.
#pragma once

#include <cstdint>
#include <vector>

#include "mrc/types.hpp"

namespace mrc {

class ReceiveWindow {
 public:
  enum class Verdict : uint8_t { kNew, kDuplicate, kOutOfWindow };

  ReceiveWindow(uint32_t capacity_psns, Psn initial);
  void reset(Psn initial);

  Verdict classify(Psn psn) const;
  // Records `psn` as received and advances the cumulative PSN. REQUIRES classify(psn) == kNew.
  void mark(Psn psn);

  Psn cumulative() const { return cumulative_; }
  uint32_t capacity() const { return capacity_; }
  // Received PSNs above the cumulative point.
  uint32_t out_of_order() const { return out_of_order_; }
  // 64 bits: bit i set iff PSN base+i has been received (PSNs before cumulative count as
  // received; PSNs past the window as not).
  uint64_t bitmap(Psn base) const;

 private:
  bool test(Psn psn) const;
  std::vector<uint64_t> bits_;
  uint32_t ring_mask_ = 0;
  uint32_t capacity_ = 0;
  Psn cumulative_;
  uint32_t out_of_order_ = 0;
};

}  // namespace mrc
