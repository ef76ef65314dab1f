// The bytes `mrc perf --verify` writes into each message and the receiver checks.
//
// Word w (8 bytes, little-endian order in memory) of message i is a hash of (seed, i, w / 8)
// plus (w % 8) steps of an odd constant. One hash per 64 bytes keeps filling and checking near
// memory speed (a hash per word held a verified run to a quarter of the datapath's rate), and
// the pattern still tells apart every message (stale bytes of an earlier one in the same slot),
// every 64-byte block (data placed at the wrong offset) and every word within a block. Any
// length works: a last partial word holds the first bytes of its pattern word.
#pragma once

#include <cstdint>

namespace mrc::tools {

// Writes message `message`'s pattern into dst[0, length).
void fill_pattern(uint8_t* dst, uint64_t message, uint64_t length);

// True if src[0, length) holds exactly message `message`'s pattern.
bool check_pattern(const uint8_t* src, uint64_t message, uint64_t length);

}  // namespace mrc::tools
