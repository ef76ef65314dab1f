// Payload-free runs (Scenario::payload = false), for fabric scale: instead of a source and a
// target buffer per flow (every payload byte held twice), the whole run shares one source
// buffer, filled with a pattern of (seed, offset), and one scratch target, each as long as the
// longest transfer. Every transfer is sent from offset 0 of the source and placed at offset 0 of
// the scratch, so the engines still copy, checksum and place every byte (their behaviour does
// not change), while memory no longer grows with the bytes written.
//
// What the checker still checks: each flow's receiver placed exactly the bytes of its
// transfers (a byte placed twice or missing fails the run), and the scratch equals the pattern
// over the longest completed transfer (a byte placed at the wrong offset within a transfer, or
// corrupted, fails it). What it cannot see: a packet placed into another transfer of the same
// length at the same offset (all transfers share the layout).
#pragma once

#include <cstdint>
#include <string>

#include "util/zeroed_buffer.h"

namespace mrc::sim {

class SharedPayload {
 public:
  SharedPayload() = default;
  SharedPayload(uint64_t longest, uint64_t seed);

  const uint8_t* source() const { return source_.data(); }
  uint8_t* source() { return source_.data(); }
  uint8_t* target() { return target_.data(); }
  const uint8_t* target() const { return target_.data(); }
  uint64_t size() const { return source_.size(); }

  // Empty if the scratch equals the pattern over [0, length), else what differs.
  std::string check_target(uint64_t length) const;

 private:
  ZeroedBuffer source_;
  ZeroedBuffer target_;
};

// Empty if a flow's receiver placed exactly `expected` bytes, else the failure.
std::string check_placed_once(uint32_t flow, uint64_t placed, uint64_t expected);

// Fills `bytes` with word k = (k + 1) x an odd constant, XOR `key`: distinct for every 8-byte
// offset, one multiply per word.
void fill_pattern(uint8_t* out, uint64_t bytes, uint64_t key);

}  // namespace mrc::sim
