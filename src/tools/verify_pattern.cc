// The verify pattern of `mrc perf` (see verify_pattern.h). Whole 64-byte blocks are stored and
// compared a word at a time with fixed-size copies, which compile to plain loads and stores;
// the check ORs the differences instead of returning at the first, since a match is the norm.
#include "tools/verify_pattern.h"

#include <algorithm>
#include <cstring>

#include "util/prng.h"

namespace mrc::tools {

namespace {

constexpr uint64_t kSeed = 0x6d72632d70657266ULL;
constexpr uint64_t kStep = 0x9E3779B97F4A7C15ULL;

uint64_t block_base(uint64_t message, uint64_t block) {
  return mix64(kSeed ^ (message << 32) ^ block);
}

uint64_t pattern_word(uint64_t message, uint64_t word) {
  return block_base(message, word / 8) + (word % 8) * kStep;
}

}  // namespace

void fill_pattern(uint8_t* dst, uint64_t message, uint64_t length) {
  const uint64_t blocks = length / 64;
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t base = block_base(message, b);
    for (uint64_t j = 0; j < 8; ++j) {
      const uint64_t v = base + j * kStep;
      std::memcpy(dst + b * 64 + j * 8, &v, 8);
    }
  }
  for (uint64_t w = blocks * 8; w * 8 < length; ++w) {
    const uint64_t v = pattern_word(message, w);
    std::memcpy(dst + w * 8, &v, std::min<uint64_t>(8, length - w * 8));
  }
}

bool check_pattern(const uint8_t* src, uint64_t message, uint64_t length) {
  const uint64_t blocks = length / 64;
  uint64_t differ = 0;
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t base = block_base(message, b);
    for (uint64_t j = 0; j < 8; ++j) {
      uint64_t got = 0;
      std::memcpy(&got, src + b * 64 + j * 8, 8);
      differ |= got ^ (base + j * kStep);
    }
  }
  for (uint64_t w = blocks * 8; w * 8 < length && differ == 0; ++w) {
    const uint64_t v = pattern_word(message, w);
    if (std::memcmp(src + w * 8, &v, std::min<uint64_t>(8, length - w * 8)) != 0) return false;
  }
  return differ == 0;
}

}  // namespace mrc::tools
