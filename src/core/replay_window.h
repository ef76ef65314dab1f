// Replay protection for secure packets: a sliding window over the packet counters of one key
// epoch, as IPsec's anti-replay window (RFC 4303 §3.4.3). A counter is fresh if it is above the
// highest seen, or within the last kPackets below it and not seen yet; anything older is
// refused, since the window no longer knows whether it came. Retransmissions carry new
// counters, so a fresh counter is never a legitimate repeat. The receiver accepts a counter only
// after its packet verified: a forged counter moves nothing.
#pragma once

#include <array>
#include <cstdint>

namespace mrc {

class ReplayWindow {
 public:
  static constexpr uint64_t kPackets = 1024;

  bool fresh(uint64_t counter) const;
  // REQUIRES: fresh(counter).
  void accept(uint64_t counter);
  // Counters accepted so far; the highest one is meaningful only when some were.
  bool empty() const { return !any_; }
  uint64_t highest() const { return highest_; }

 private:
  bool seen(uint64_t counter) const;

  bool any_ = false;
  uint64_t highest_ = 0;
  // Bit (c % kPackets) for every counter c in (highest_ - kPackets, highest_] that was accepted.
  std::array<uint64_t, kPackets / 64> bits_{};
};

}  // namespace mrc
