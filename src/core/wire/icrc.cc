// ICRC: CRC-32 with the IEEE 802.3 polynomial in reflected form (0xEDB88320), initial register
// 0xFFFFFFFF and final xor 0xFFFFFFFF -- the same function as zlib's crc32().
//
// The ICRC is computed twice per data packet (seal on send, check on receive), so it is on the
// per-packet path. Three implementations that must agree bit for bit:
//  * portable slicing-by-8: eight 256-entry tables, table s giving the register contribution of a
//    byte followed by s zero bytes, so one 64-bit word is consumed per step with eight
//    independent lookups instead of eight dependent ones;
//  * x86-64 PCLMULQDQ folding: the message is a polynomial over GF(2). Four 128-bit accumulators
//    each step forward 512 bits at once by a carry-less multiply with x^512 mod P, which keeps them
//    congruent mod P to the bytes they stand for; at the end they are merged, and the last 128
//    bits and the tail are finished with the table;
//  * the same with 512-bit VPCLMULQDQ (AVX-512) registers, four lanes per instruction.
// The implementation is chosen at run time (__builtin_cpu_supports), so the build needs no -march
// flags. Every table and folding constant is computed at compile time from the polynomial.
//
// Bit order. In a reflected CRC, bit 0 of byte 0 is the highest-degree coefficient. A 16-byte
// little-endian load therefore yields a 128-bit register R whose bit k is the coefficient of
// x^(127-k); its low 64-bit half H holds x^127..x^64 and its high half L holds x^63..x^0, so
// R = H*x^64 + L. A carry-less product of a 64-bit half (bit i ~ x^(63-i)) with a constant whose
// bit j stands for x^(32-j) has bit i+j standing for x^(95-(i+j)), i.e. read as a 128-bit
// register it is the polynomial product times x^32. So to get H*x^t (mod P) we multiply by
// reflect32(x^(t-32) mod P) << 1, a 33-bit constant (fold_constant below).
#include "core/wire/icrc.h"

#include "core/wire/packet.h"
#include "util/assert.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define MRC_ICRC_X86 1
#else
#define MRC_ICRC_X86 0
#endif

namespace mrc::wire {
namespace {

// x^32 + x^26 + ... + 1 without the x^32 term, bit-reversed: bit i is the coefficient of x^(31-i).
constexpr uint32_t kPolyReflected = 0xEDB88320u;

struct CrcTables {
  uint32_t t[8][256];
};

constexpr CrcTables make_tables() {
  CrcTables tables{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ kPolyReflected : c >> 1;
    tables.t[0][b] = c;
  }
  // Table s: byte b followed by s zero bytes = table s-1 advanced by one more zero byte.
  for (int s = 1; s < 8; ++s) {
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t prev = tables.t[s - 1][b];
      tables.t[s][b] = (prev >> 8) ^ tables.t[0][prev & 0xFFu];
    }
  }
  return tables;
}

constexpr CrcTables kTables = make_tables();
static_assert(kTables.t[0][1] == 0x77073096u, "CRC-32 table entry for 0x01");
static_assert(kTables.t[0][128] == kPolyReflected, "CRC-32 table entry for 0x80");

inline uint32_t load_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// Advances the CRC register (before the final xor) over n bytes.
uint32_t update_tables(uint32_t crc, const uint8_t* p, size_t n) {
  const auto& t = kTables.t;
  while (n >= 8) {
    const uint32_t lo = load_le32(p) ^ crc;
    const uint32_t hi = load_le32(p + 4);
    crc = t[7][lo & 0xFFu] ^ t[6][(lo >> 8) & 0xFFu] ^ t[5][(lo >> 16) & 0xFFu] ^ t[4][lo >> 24] ^
          t[3][hi & 0xFFu] ^ t[2][(hi >> 8) & 0xFFu] ^ t[1][(hi >> 16) & 0xFFu] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  for (; n > 0; --n, ++p) crc = t[0][(crc ^ *p) & 0xFFu] ^ (crc >> 8);
  return crc;
}

#if MRC_ICRC_X86

// reflect32(x^n mod P): start from x^0 (bit 31) and multiply by x n times. Multiplying by x moves
// every coefficient one bit to the right; a coefficient leaving x^31 becomes x^32 = P - x^32.
constexpr uint32_t xpow_mod_reflected(uint32_t n) {
  uint32_t v = 0x80000000u;
  for (uint32_t i = 0; i < n; ++i) v = (v & 1u) ? (v >> 1) ^ kPolyReflected : v >> 1;
  return v;
}
static_assert(xpow_mod_reflected(32) == kPolyReflected, "x^32 mod P");

// Multiplier that turns a 64-bit register half H into H*x^t (mod P); see the file comment.
constexpr uint64_t fold_constant(uint32_t t) {
  return uint64_t{xpow_mod_reflected(t - 32)} << 1;
}

// Constant pair that moves a 128-bit register t bits forward: the low half (H, the higher-degree
// coefficients) must go t + 64 further, the high half (L) t further.
struct FoldPair {
  uint64_t low;
  uint64_t high;
};
constexpr FoldPair fold_pair(uint32_t t) {
  return {fold_constant(t + 64), fold_constant(t)};
}

constexpr FoldPair kFold128 = fold_pair(128);
constexpr FoldPair kFold512 = fold_pair(512);
constexpr FoldPair kFold2048 = fold_pair(2048);

// Below these lengths the table (resp. the 128-bit path) is as fast as the vector path's setup
// (measured on Zen 4, bench/wire_bench.cc).
constexpr size_t kClmulMinBytes = 64;
constexpr size_t kVclmulMinBytes = 256;

#define MRC_CLMUL_TARGET __attribute__((target("pclmul,sse4.1")))
#define MRC_VCLMUL_TARGET \
  __attribute__((target("pclmul,sse4.1,avx2,avx512f,avx512bw,avx512vl,vpclmulqdq")))
// The 128-bit helpers are always inlined, so that inside an AVX-512 function they are compiled
// with VEX encodings too: legacy-SSE instructions run after AVX-512 code with dirty upper
// register halves are measurably slower (2x for PCLMULQDQ on Zen 4).
#define MRC_ALWAYS_INLINE inline __attribute__((always_inline))

MRC_CLMUL_TARGET MRC_ALWAYS_INLINE __m128i pair128(FoldPair k) {
  return _mm_set_epi64x(static_cast<long long>(k.high), static_cast<long long>(k.low));
}

MRC_CLMUL_TARGET MRC_ALWAYS_INLINE __m128i load128(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// acc moved forward by the distance k encodes, plus the next block.
MRC_CLMUL_TARGET MRC_ALWAYS_INLINE __m128i fold128(__m128i acc, __m128i k, __m128i next) {
  const __m128i from_high_degrees = _mm_clmulepi64_si128(acc, k, 0x00);
  const __m128i from_low_degrees = _mm_clmulepi64_si128(acc, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(from_high_degrees, from_low_degrees), next);
}

// Folds 16-byte blocks into acc while they last, then finishes acc and the < 16-byte tail with
// the table: the table run over acc's bytes from a zero register yields acc * x^32 mod P, which is
// the register state for everything acc stands for.
MRC_CLMUL_TARGET MRC_ALWAYS_INLINE uint32_t finish128(__m128i acc, const uint8_t* p, size_t n) {
  const __m128i k128 = pair128(kFold128);
  for (; n >= 16; p += 16, n -= 16) acc = fold128(acc, k128, load128(p));
  alignas(16) uint8_t block[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(block), acc);
  return update_tables(update_tables(0, block, 16), p, n);
}

// REQUIRES: n >= 16. The register's initial value is xored into the first four message bytes,
// which is what a reflected CRC register does with them.
MRC_CLMUL_TARGET MRC_ALWAYS_INLINE uint32_t clmul_body(uint32_t crc, const uint8_t* p, size_t n) {
  __m128i x0 = _mm_xor_si128(load128(p), _mm_cvtsi32_si128(static_cast<int>(crc)));
  if (n < 64) return finish128(x0, p + 16, n - 16);
  __m128i x1 = load128(p + 16);
  __m128i x2 = load128(p + 32);
  __m128i x3 = load128(p + 48);
  p += 64;
  n -= 64;
  const __m128i k512 = pair128(kFold512);
  for (; n >= 64; p += 64, n -= 64) {
    x0 = fold128(x0, k512, load128(p));
    x1 = fold128(x1, k512, load128(p + 16));
    x2 = fold128(x2, k512, load128(p + 32));
    x3 = fold128(x3, k512, load128(p + 48));
  }
  const __m128i k128 = pair128(kFold128);
  __m128i acc = fold128(x0, k128, x1);
  acc = fold128(acc, k128, x2);
  acc = fold128(acc, k128, x3);
  return finish128(acc, p, n);
}

// The 128-bit path twice: with legacy-SSE encodings for CPUs without AVX, and with VEX encodings
// for use next to the AVX-512 path.
MRC_CLMUL_TARGET uint32_t update_clmul(uint32_t crc, const uint8_t* p, size_t n) {
  return clmul_body(crc, p, n);
}
MRC_VCLMUL_TARGET uint32_t update_clmul_vex(uint32_t crc, const uint8_t* p, size_t n) {
  return clmul_body(crc, p, n);
}

MRC_VCLMUL_TARGET MRC_ALWAYS_INLINE __m512i pair512(FoldPair k) {
  const auto low = static_cast<long long>(k.low);
  const auto high = static_cast<long long>(k.high);
  return _mm512_set_epi64(high, low, high, low, high, low, high, low);
}

MRC_VCLMUL_TARGET MRC_ALWAYS_INLINE __m512i load512(const uint8_t* p) {
  return _mm512_loadu_si512(p);
}

MRC_VCLMUL_TARGET MRC_ALWAYS_INLINE __m512i fold512(__m512i acc, __m512i k, __m512i next) {
  const __m512i from_high_degrees = _mm512_clmulepi64_epi128(acc, k, 0x00);
  const __m512i from_low_degrees = _mm512_clmulepi64_epi128(acc, k, 0x11);
  return _mm512_ternarylogic_epi64(from_high_degrees, from_low_degrees, next, 0x96);  // a^b^c
}

// Folds the four 128-bit lanes of z (lane 0 first in the message) into one accumulator. Written
// through memory because GCC 12's lane-extract intrinsics trip -Wuninitialized on their undefined
// operands; the compiler turns it back into register extracts.
MRC_VCLMUL_TARGET MRC_ALWAYS_INLINE __m128i merge_lanes(__m512i z) {
  alignas(64) uint8_t lanes[64];
  _mm512_store_si512(lanes, z);
  const __m128i k128 = pair128(kFold128);
  __m128i acc = fold128(load128(lanes), k128, load128(lanes + 16));
  acc = fold128(acc, k128, load128(lanes + 32));
  return fold128(acc, k128, load128(lanes + 48));
}

// REQUIRES: n >= 256. Four 512-bit accumulators, 256 bytes per step.
MRC_VCLMUL_TARGET uint32_t update_vclmul(uint32_t crc, const uint8_t* p, size_t n) {
  const __m512i seed = _mm512_maskz_set1_epi32(1, static_cast<int>(crc));
  __m512i z0 = _mm512_xor_si512(load512(p), seed);
  __m512i z1 = load512(p + 64);
  __m512i z2 = load512(p + 128);
  __m512i z3 = load512(p + 192);
  p += 256;
  n -= 256;
  const __m512i k2048 = pair512(kFold2048);
  for (; n >= 256; p += 256, n -= 256) {
    z0 = fold512(z0, k2048, load512(p));
    z1 = fold512(z1, k2048, load512(p + 64));
    z2 = fold512(z2, k2048, load512(p + 128));
    z3 = fold512(z3, k2048, load512(p + 192));
  }
  const __m512i k512 = pair512(kFold512);
  __m512i z = fold512(z0, k512, z1);
  z = fold512(z, k512, z2);
  z = fold512(z, k512, z3);
  for (; n >= 64; p += 64, n -= 64) z = fold512(z, k512, load512(p));
  const __m128i acc = merge_lanes(z);
  // Clean upper register state before the 128-bit and scalar code that follows (and the
  // caller's legacy-SSE code); GCC does not insert this itself here.
  _mm256_zeroupper();
  return finish128(acc, p, n);
}

#undef MRC_CLMUL_TARGET
#undef MRC_VCLMUL_TARGET
#undef MRC_ALWAYS_INLINE

#endif  // MRC_ICRC_X86

enum class Engine : uint8_t { kPortable, kClmul, kVclmul };

Engine detect_engine() {
#if MRC_ICRC_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") &&
      __builtin_cpu_supports("sse4.1")) {
    return Engine::kVclmul;
  }
  if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) return Engine::kClmul;
#endif
  return Engine::kPortable;
}

Engine engine() {
  static const Engine detected = detect_engine();
  return detected;
}

}  // namespace

namespace detail {

uint32_t icrc32_portable(std::span<const uint8_t> bytes) {
  return ~update_tables(0xFFFFFFFFu, bytes.data(), bytes.size());
}

bool clmul_available() {
  return engine() != Engine::kPortable;
}
bool vclmul_available() {
  return engine() == Engine::kVclmul;
}

uint32_t icrc32_clmul(std::span<const uint8_t> bytes) {
  MRC_ASSERT(clmul_available());
#if MRC_ICRC_X86
  if (bytes.size() >= 16) return ~update_clmul(0xFFFFFFFFu, bytes.data(), bytes.size());
#endif
  return icrc32_portable(bytes);
}

uint32_t icrc32_vclmul(std::span<const uint8_t> bytes) {
  MRC_ASSERT(vclmul_available());
#if MRC_ICRC_X86
  if (bytes.size() >= 256) return ~update_vclmul(0xFFFFFFFFu, bytes.data(), bytes.size());
  if (bytes.size() >= 16) return ~update_clmul_vex(0xFFFFFFFFu, bytes.data(), bytes.size());
#endif
  return icrc32_portable(bytes);
}

}  // namespace detail

uint32_t icrc32(std::span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  const size_t n = bytes.size();
#if MRC_ICRC_X86
  const Engine e = engine();
  if (e == Engine::kVclmul && n >= kClmulMinBytes) {
    return ~(n >= kVclmulMinBytes ? update_vclmul(0xFFFFFFFFu, p, n)
                                  : update_clmul_vex(0xFFFFFFFFu, p, n));
  }
  if (e == Engine::kClmul && n >= kClmulMinBytes) return ~update_clmul(0xFFFFFFFFu, p, n);
#endif
  return ~update_tables(0xFFFFFFFFu, p, n);
}

}  // namespace mrc::wire
