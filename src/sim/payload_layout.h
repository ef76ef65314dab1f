// Where a payload run keeps its bytes: each flow's target apart, and each flow's source as a
// window into a pattern that a group of flows shares, so memory holds each written byte once
// rather than twice while the checker still sees a byte placed into the wrong flow or at the
// wrong offset.
//
// Why sharing loses nothing: flow i of a group of G reads its source from offset i mod G of the
// group's pattern (one pattern per group, keyed by the seed and the group). A packet's payload
// starts at its transfer's offset in the flow (a sum of transfer lengths) plus a multiple of
// the MTU, so every start is a multiple of the placement grain, the GCD of the MTU and every
// transfer length. With G = the grain, two windows of one group are fewer than G bytes apart,
// so a packet of one flow placed anywhere in another flow of its group, or at another offset of
// its own, reads pattern bytes from a different position than the checker expects there;
// flows of different groups read different patterns. A pattern per flow would see no more.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mrc::sim {

struct PayloadLayout {
  uint64_t grain = 1;                   // flows per group
  std::vector<uint64_t> pattern_at;     // per group: its pattern's offset in the block
  std::vector<uint64_t> pattern_bytes;  // per group: its pattern's length
  std::vector<uint64_t> source_at;      // per flow: its source window's offset in the block
  std::vector<uint64_t> target_at;      // per flow: its target's offset in the block
  uint64_t targets_from = 0;            // patterns first, then every target from here on
  uint64_t total_bytes = 0;
};

// The placement grain: the GCD of `mtu_bytes` and `lengths_gcd` (the GCD of every transfer
// length; 0 if there are none), at least 1.
uint64_t placement_grain(uint64_t mtu_bytes, uint64_t lengths_gcd);

// Lays out flows of `flow_bytes` each (a flow's transfers back to back) in one block: every
// slice at least 1 byte long and 64-byte aligned.
PayloadLayout lay_out_payload(std::span<const uint64_t> flow_bytes, uint64_t grain);

}  // namespace mrc::sim
