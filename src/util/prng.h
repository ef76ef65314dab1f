// Deterministic pseudo-random generator (xoshiro256**, seeded by splitmix64).
//
// Every random choice in mrc (EV generation and rotation in the engine, faults in the
// simulator) draws from a Prng that its owner was given a seed for, so any run can be replayed
// exactly from its seed. Nothing in src/core seeds a generator from the clock or the OS.
#pragma once

#include <cstdint>

namespace mrc {

class Prng {
 public:
  explicit Prng(uint64_t seed) { reseed(seed); }

  void reseed(uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t& word : state_) word = splitmix64(x);
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  uint32_t next_u32() { return static_cast<uint32_t>(next_u64() >> 32); }

  // Uniform in [0, bound); bound must be > 0. Lemire's multiply-shift, bias below 2^-32.
  uint64_t below(uint64_t bound) {
    __extension__ using u128 = unsigned __int128;
    const u128 product = static_cast<u128>(next_u64()) * bound;
    return static_cast<uint64_t>(product >> 64);
  }

  // Uniform in [0, 1).
  double unit() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  // True with probability p.
  bool chance(double p) { return p > 0 && unit() < p; }

  static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4] = {};
};

// A stateless 64-bit mixer, for deterministic hashing (ECMP, EV-to-path maps).
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ULL;
  x ^= x >> 33;
  return x;
}

}  // namespace mrc
