// ICRC: CRC-32 with the IEEE 802.3 polynomial in reflected form (0xEDB88320), initial register
// 0xFFFFFFFF and final xor 0xFFFFFFFF -- the same function as zlib's crc32().
//
// The ICRC is computed twice per data packet (seal on send, check on receive), so it is on the
// per-packet path. Three implementations that must agree bit for bit:
//  * portable slicing-by-8: eight 256-entry tables, table s giving the register contribution of a
//    byte followed by s zero bytes, so one 64-bit word is consumed per step with eight
//    independent lookups instead of eight dependent ones;
//  * x86-64 PCLMULQDQ folding (128-bit registers), and
//  * the same with 512-bit VPCLMULQDQ (AVX-512) registers, four 128-bit lanes per instruction.
// The implementation is chosen at run time (__builtin_cpu_supports), so the build needs no -march
// flags. Every table and constant is computed at compile time from the polynomial.
//
// The math of the carry-less multiplication paths. The message M (n bytes) is a polynomial over
// GF(2), first bit highest; P = x^32 + P' is the generator. The CRC register after the message is
//     crc = init * x^(8n) + M * x^32   (mod P),                                             (1)
// and the ICRC is ~crc. All we ever need is some polynomial congruent to crc mod P, so:
//  * Folding. A 16-byte block B standing for B * x^d in (1) may be replaced by anything congruent
//    to it, e.g. (B * x^d) mod P spread over a block nearer the end. Four (or sixteen, in four
//    zmm registers) accumulators each step 64 (256) bytes forward per carry-less multiply, so
//    the loop is bound by multiplier throughput, not latency.
//  * Front padding. Zero bytes in front of M do not change its polynomial, so the vector paths
//    pretend M is preceded by `pad` zero bytes that make its length a whole number of blocks
//    (64 bytes with AVX-512, 16 without); the first block is loaded with a byte mask (AVX-512)
//    or a byte shuffle. There is no tail.
//  * The initial register. init * x^(8n) is init xored into message bytes 0..3, which may
//    straddle two 16-byte lanes. Instead we xor into the last four bytes of the lane holding
//    message byte 0 (a 128-bit value T standing for T * x^(8e+32) in (1), e the number of bytes
//    after that lane) a 32-bit T with T * x^(8e+32) = init * x^(8n). With s = pad mod 16 the
//    lane starts s bytes before the message and ends 16 - s bytes into it: e = n - 16 + s, so
//    T = init * x^(96 - 8s) mod P (kInitTerms; x is invertible mod P since P(0) = 1).
//  * The finish. Every lane is multiplied, in one step, into a polynomial of degree < 96 that is
//    congruent to its share of (1) (kLast256: a lane with k 16-byte blocks after it is moved
//    128k + 64 bits forward -- the extra 64 bits are the x^32 of (1) plus the 32-bit offset of
//    the product, see "Bit order"); xoring them gives S, deg S < 96, crc = S mod P. Then Barrett
//    reduction with two more multiplies: for N1 = floor(S / x^32) (deg < 64) the quotient is
//    Q = floor(S / P) = floor(N1 * floor(x^96 / P) / x^64), exact because deg S < 32 + 64. The
//    x^0 term of floor(x^96 / P) only reaches degrees < 64 of that product, so
//    Q = floor(N1 * nu / x^63) with nu = floor(x^95 / P), a 64-bit constant. Finally
//    crc = S - Q * P, of which only the low 32 coefficients are needed: those of S plus those
//    of Q * P' (Q * x^32 has none).
//
// Bit order. In a reflected CRC, bit 0 of byte 0 is the highest-degree coefficient. A 16-byte
// little-endian load therefore yields a 128-bit register R whose bit k is the coefficient of
// x^(127-k); its low 64-bit half H holds x^127..x^64 and its high half L holds x^63..x^0, so
// R = H*x^64 + L. A carry-less product of a 64-bit half (bit i ~ x^(63-i)) with a constant whose
// bit j stands for x^(32-j) has bit i+j standing for x^(95-(i+j)), i.e. read as a 128-bit
// register it is the polynomial product times x^32. So to get H*x^t (mod P) we multiply by
// reflect32(x^(t-32) mod P) << 1, a 33-bit constant (fold_constant below). The same product read
// as a 96-bit value (bit m ~ x^(95-m)) is the plain product: that is how S above is held, with
// floor(S / x^32) in the low 64-bit half and the low 32 coefficients in 32-bit word 2.
#include "core/wire/icrc.h"

#include "core/wire/packet.h"
#include "mrc/assert.hpp"

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
constexpr uint32_t kInitRegister = 0xFFFFFFFFu;

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

// ---- Constants (polynomial arithmetic mod P on reflected values: bit i ~ x^(31-i)) ----------

// v * x mod P: every coefficient moves one bit to the right; one leaving x^31 becomes
// x^32 = P' (mod P).
constexpr uint32_t mul_x(uint32_t v) {
  return (v & 1u) ? (v >> 1) ^ kPolyReflected : v >> 1;
}

// v * x^-1 mod P, the inverse of mul_x: mul_x sets the x^0 coefficient (bit 31) exactly when it
// reduced, because v >> 1 has no x^0 term and P' does.
constexpr uint32_t div_x(uint32_t v) {
  const uint32_t reduced = v >> 31;
  return ((reduced != 0 ? v ^ kPolyReflected : v) << 1) | reduced;
}
static_assert(div_x(mul_x(0x12345678u)) == 0x12345678u && div_x(mul_x(0x87654321u)) == 0x87654321u,
              "div_x inverts mul_x");

// reflect32(x^n mod P), starting from x^0 (bit 31).
constexpr uint32_t xpow_mod_reflected(uint32_t n) {
  uint32_t v = 0x80000000u;
  for (uint32_t i = 0; i < n; ++i) v = mul_x(v);
  return v;
}
static_assert(xpow_mod_reflected(32) == kPolyReflected, "x^32 mod P");

// Multiplier that turns a 64-bit register half H into H*x^t (mod P); see "Bit order".
constexpr uint64_t fold_constant(uint32_t t) {
  return uint64_t{xpow_mod_reflected(t - 32)} << 1;
}

// Constant pair that moves a 128-bit register t bits forward: the low half (H, the higher-degree
// coefficients) must go t + 64 further, the high half (L) t further. Laid out as a register:
// `low` multiplies H (clmul selector 0x00), `high` multiplies L (selector 0x11).
struct FoldPair {
  uint64_t low;
  uint64_t high;
};
constexpr FoldPair fold_pair(uint32_t t) {
  return {fold_constant(t + 64), fold_constant(t)};
}

constexpr FoldPair kFold512 = fold_pair(512);
constexpr FoldPair kFold2048 = fold_pair(2048);

// Finish constants for the last 256 bytes of a (padded) message: pair[b] moves 16-byte block b
// (b = 15 is the last block) past the end into the degree < 96 form S (see the file comment).
// Block b has 15 - b blocks after it. Loaded 64 bytes at a time, so aligned for that.
struct alignas(64) LastBlocks {
  FoldPair pair[16];
};
constexpr LastBlocks make_last_blocks() {
  LastBlocks last{};
  for (uint32_t b = 0; b < 16; ++b) last.pair[b] = fold_pair(128 * (15 - b) + 64);
  return last;
}
constexpr LastBlocks kLast256 = make_last_blocks();

// kInitTerms[s] = init * x^(96 - 8s) mod P (reflected), the stand-in for the initial register
// when message byte 0 is byte s of its 16-byte lane.
struct InitTerms {
  uint32_t term[16];
};
constexpr InitTerms make_init_terms() {
  InitTerms terms{};
  uint32_t v = kInitRegister;
  for (int i = 0; i < 96; ++i) v = mul_x(v);
  for (int s = 0; s < 16; ++s) {
    terms.term[s] = v;
    for (int i = 0; i < 8; ++i) v = div_x(v);
  }
  return terms;
}
constexpr InitTerms kInitTerms = make_init_terms();

// Carry-less 64 x 64 -> 128-bit product in normal bit order (bit i ~ x^i), for static checks.
struct U128 {
  uint64_t lo;
  uint64_t hi;
};
constexpr U128 clmul64(uint64_t a, uint64_t b) {
  U128 r{0, 0};
  for (int i = 0; i < 64; ++i) {
    if ((b >> i) & 1u) {
      r.lo ^= a << i;
      if (i > 0) r.hi ^= a >> (64 - i);
    }
  }
  return r;
}

constexpr uint64_t reverse_bits(uint64_t v, int width) {
  uint64_t r = 0;
  for (int i = 0; i < width; ++i) r |= ((v >> i) & 1u) << (width - 1 - i);
  return r;
}

// P in normal bit order, 33 bits.
constexpr uint64_t kPolyNormal = (uint64_t{1} << 32) | reverse_bits(kPolyReflected, 32);
static_assert(kPolyNormal == 0x104C11DB7ull, "IEEE 802.3 polynomial");

// floor(x^95 / P) by long division: bring down one coefficient of x^95 at a time (degree k),
// and whenever the running remainder reaches degree 32, subtract P * x^k and record x^k.
constexpr uint64_t quotient_x95_normal() {
  uint64_t remainder = 0;
  uint64_t quotient = 0;
  for (int k = 95; k >= 0; --k) {
    remainder = (remainder << 1) | (k == 95 ? 1u : 0u);
    quotient <<= 1;
    if ((remainder >> 32) != 0) {
      remainder ^= kPolyNormal;
      quotient |= 1;
    }
  }
  return quotient;
}
constexpr uint64_t kQuotientX95 = quotient_x95_normal();
// x^95 - Q * P must have degree < 32, and Q degree exactly 63.
static_assert((kQuotientX95 >> 63) == 1, "deg floor(x^95 / P) = 63");
static_assert(clmul64(kQuotientX95, kPolyNormal).hi == (uint64_t{1} << 31) &&
                  (clmul64(kQuotientX95, kPolyNormal).lo >> 32) == 0,
              "x^95 = floor(x^95 / P) * P + (remainder of degree < 32)");

// Barrett constants as a register: low half nu = floor(x^95 / P) reflected to bit j ~ x^(63-j),
// high half P' with bit j ~ x^(32-j) (the same shape as a fold constant).
constexpr uint64_t kBarrettNu = reverse_bits(kQuotientX95, 64);
constexpr uint64_t kBarrettPoly = uint64_t{kPolyReflected} << 1;

// Below these lengths the table is as fast (measured on Zen 4): up to 8 bytes it is one step;
// the 128-bit path needs 16 bytes to shuffle the first block from. (Datagrams are >= 16 bytes.)
constexpr size_t kClmulMinBytes = 16;
constexpr size_t kVclmulMinBytes = 9;

#define MRC_CLMUL_TARGET __attribute__((target("pclmul,sse4.1")))
#define MRC_VCLMUL_TARGET \
  __attribute__((target("pclmul,sse4.1,avx2,avx512f,avx512bw,avx512vl,vpclmulqdq")))
// The 128-bit helpers are always inlined, so that inside an AVX-512 function they are compiled
// with VEX encodings too: legacy-SSE instructions run after AVX-512 code with dirty upper
// register halves are measurably slower (2x for PCLMULQDQ on Zen 4).
#define MRC_ALWAYS_INLINE inline __attribute__((always_inline))

// ---- 128-bit helpers ---------------------------------------------------------------------

MRC_CLMUL_TARGET MRC_ALWAYS_INLINE __m128i pair128(FoldPair k) {
  return _mm_set_epi64x(static_cast<long long>(k.high), static_cast<long long>(k.low));
}

MRC_CLMUL_TARGET MRC_ALWAYS_INLINE __m128i load128(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

// acc moved forward by the distance k encodes, plus the next block.
MRC_CLMUL_TARGET MRC_ALWAYS_INLINE __m128i fold128(__m128i acc, __m128i k, __m128i next) {
  const __m128i from_high_degrees = _mm_clmulepi64_si128(acc, k, 0x00);
  const __m128i from_low_degrees = _mm_clmulepi64_si128(acc, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(from_high_degrees, from_low_degrees), next);
}

// Block b of the last 256 bytes moved into the form S (degree < 96).
MRC_CLMUL_TARGET MRC_ALWAYS_INLINE __m128i last_block(__m128i block, size_t b) {
  return fold128(block, load128(&kLast256.pair[b]), _mm_setzero_si128());
}

// The initial-register stand-in for message byte 0 at byte s of its lane, in the lane's last
// 32-bit word (bits 96..127 hold x^31..x^0 of the lane).
MRC_CLMUL_TARGET MRC_ALWAYS_INLINE __m128i init_term128(size_t s) {
  return _mm_set_epi32(static_cast<int>(kInitTerms.term[s]), 0, 0, 0);
}

// S (degree < 96: floor(S / x^32) in bits 0..63, the x^31..x^0 coefficients in bits 64..95) to
// S mod P, the CRC register. Q = floor(floor(S / x^32) * nu / x^63) is the low half of the first
// product; Q * P' lands with its x^31..x^0 coefficients in bits 64..95, like S.
MRC_CLMUL_TARGET MRC_ALWAYS_INLINE uint32_t barrett(__m128i s) {
  const __m128i k = pair128({kBarrettNu, kBarrettPoly});
  const __m128i quotient = _mm_clmulepi64_si128(s, k, 0x00);
  const __m128i multiple = _mm_clmulepi64_si128(quotient, k, 0x10);
  return static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(s, multiple), 2));
}

// pshufb masks: 16 bytes loaded at kShiftIn + 16 - s move byte j to j + s and zero bytes 0..s-1.
constexpr uint8_t kShiftIn[32] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                  0x80, 0x80, 0x80, 0x80, 0x80, 0,    1,    2,    3,    4,    5,
                                  6,    7,    8,    9,    10,   11,   12,   13,   14,   15};

// ---- 128-bit PCLMULQDQ path --------------------------------------------------------------

// REQUIRES: n >= 16. The message is front-padded to whole 16-byte blocks: the first block is the
// first 16 bytes shifted right by `pad`.
MRC_CLMUL_TARGET uint32_t crc_clmul(const uint8_t* p, size_t n) {
  const size_t pad = (16 - n % 16) % 16;
  const size_t blocks = (n + pad) / 16;
  const __m128i first =
      _mm_xor_si128(_mm_shuffle_epi8(load128(p), load128(kShiftIn + 16 - pad)), init_term128(pad));
  p += 16 - pad;  // the second block
  if (blocks <= 4) {
    __m128i s = last_block(first, 16 - blocks);
    for (size_t i = 1; i < blocks; ++i, p += 16) {
      s = _mm_xor_si128(s, last_block(load128(p), 16 - blocks + i));
    }
    return ~barrett(s);
  }
  // Four accumulators, 64 bytes per step, then 0..3 single blocks; each accumulator and block
  // then goes straight into S with the constant for the number of blocks after it.
  __m128i x0 = first;
  __m128i x1 = load128(p);
  __m128i x2 = load128(p + 16);
  __m128i x3 = load128(p + 32);
  p += 48;
  size_t rest = blocks - 4;
  const __m128i k512 = pair128(kFold512);
  for (; rest >= 4; rest -= 4, p += 64) {
    x0 = fold128(x0, k512, load128(p));
    x1 = fold128(x1, k512, load128(p + 16));
    x2 = fold128(x2, k512, load128(p + 32));
    x3 = fold128(x3, k512, load128(p + 48));
  }
  __m128i s = _mm_xor_si128(_mm_xor_si128(last_block(x0, 12 - rest), last_block(x1, 13 - rest)),
                            _mm_xor_si128(last_block(x2, 14 - rest), last_block(x3, 15 - rest)));
  for (size_t j = 0; j < rest; ++j, p += 16) {
    s = _mm_xor_si128(s, last_block(load128(p), 16 - rest + j));
  }
  return ~barrett(s);
}

// ---- 512-bit VPCLMULQDQ path -------------------------------------------------------------

MRC_VCLMUL_TARGET MRC_ALWAYS_INLINE __m512i pair512(FoldPair k) {
  const auto low = static_cast<long long>(k.low);
  const auto high = static_cast<long long>(k.high);
  return _mm512_set_epi64(high, low, high, low, high, low, high, low);
}

MRC_VCLMUL_TARGET MRC_ALWAYS_INLINE __m512i load512(const uint8_t* p) {
  return _mm512_loadu_si512(p);
}

// `p - back` as an address only: the bytes before p are never read (their mask bits are 0).
MRC_ALWAYS_INLINE const uint8_t* before(const uint8_t* p, size_t back) {
  return reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(p) - back);
}

// The first 64-byte block of a message front-padded with pad < 64 zero bytes: the bytes before
// the message are masked off, so never read (AVX-512 masked loads do not fault on masked-off
// bytes), and the initial-register stand-in is xored into the lane holding message byte 0.
MRC_VCLMUL_TARGET MRC_ALWAYS_INLINE __m512i load_first(const uint8_t* p, size_t pad) {
  const __m512i z = _mm512_maskz_loadu_epi8(~uint64_t{0} << pad, before(p, pad));
  const auto last_word_of_lane = static_cast<__mmask16>(1u << (4 * (pad / 16) + 3));
  return _mm512_mask_xor_epi32(z, last_word_of_lane, z,
                               _mm512_set1_epi32(static_cast<int>(kInitTerms.term[pad % 16])));
}

// Register q (of 4) of the last 256 bytes moved into the form S, xored into acc.
MRC_VCLMUL_TARGET MRC_ALWAYS_INLINE __m512i last_zmm(__m512i acc, __m512i z, size_t q) {
  const __m512i k = _mm512_load_si512(&kLast256.pair[4 * q]);
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x00),
                                   _mm512_clmulepi64_epi128(z, k, 0x11), acc, 0x96);  // a^b^c
}

MRC_VCLMUL_TARGET MRC_ALWAYS_INLINE __m512i fold512(__m512i acc, __m512i k, __m512i next) {
  const __m512i from_high_degrees = _mm512_clmulepi64_epi128(acc, k, 0x00);
  const __m512i from_low_degrees = _mm512_clmulepi64_epi128(acc, k, 0x11);
  return _mm512_ternarylogic_epi64(from_high_degrees, from_low_degrees, next, 0x96);  // a^b^c
}

// The xor of the four 128-bit lanes of z. Zero-masking extracts with a full mask: GCC 12's plain
// ones pass an undefined operand that trips -Wmaybe-uninitialized.
MRC_VCLMUL_TARGET MRC_ALWAYS_INLINE __m128i xor_lanes(__m512i z) {
  const __m256i y = _mm256_xor_si256(_mm512_maskz_extracti64x4_epi64(0xFF, z, 0),
                                     _mm512_maskz_extracti64x4_epi64(0xFF, z, 1));
  return _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
}

// S for 64 * (kRegisters - 1) < n <= 64 * kRegisters: the message front-padded to kRegisters
// * 64 bytes, which are the last kRegisters registers of a 256-byte group.
template <size_t kRegisters>
MRC_VCLMUL_TARGET MRC_ALWAYS_INLINE __m128i short_vclmul(const uint8_t* p, size_t n) {
  const size_t pad = 64 * kRegisters - n;
  __m512i s = last_zmm(_mm512_setzero_si512(), load_first(p, pad), 4 - kRegisters);
  for (size_t r = 1; r < kRegisters; ++r) {
    s = last_zmm(s, load512(p + 64 * r - pad), 4 - kRegisters + r);
  }
  return xor_lanes(s);
}

// S for n > 256: the message front-padded to whole 64-byte blocks, four 512-bit accumulators
// folded 256 bytes forward per step. The 0..3 blocks left after the last whole step are folded
// into the first accumulators, which then hold the newest blocks: accumulator i ends up at
// position (i - rest) mod 4 of the last four.
MRC_VCLMUL_TARGET MRC_ALWAYS_INLINE __m128i long_vclmul(const uint8_t* p, size_t n) {
  const size_t pad = (64 - n % 64) % 64;
  __m512i z0 = load_first(p, pad);
  p += 64 - pad;
  __m512i z1 = load512(p);
  __m512i z2 = load512(p + 64);
  __m512i z3 = load512(p + 128);
  p += 192;
  size_t rest = (n + pad) / 64 - 4;
  const __m512i k2048 = pair512(kFold2048);
  for (; rest >= 4; rest -= 4, p += 256) {
    z0 = fold512(z0, k2048, load512(p));
    z1 = fold512(z1, k2048, load512(p + 64));
    z2 = fold512(z2, k2048, load512(p + 128));
    z3 = fold512(z3, k2048, load512(p + 192));
  }
  if (rest > 0) z0 = fold512(z0, k2048, load512(p));
  if (rest > 1) z1 = fold512(z1, k2048, load512(p + 64));
  if (rest > 2) z2 = fold512(z2, k2048, load512(p + 128));
  const __m512i s01 =
      last_zmm(last_zmm(_mm512_setzero_si512(), z0, (4 - rest) % 4), z1, (5 - rest) % 4);
  const __m512i s23 =
      last_zmm(last_zmm(_mm512_setzero_si512(), z2, (6 - rest) % 4), z3, (7 - rest) % 4);
  return xor_lanes(_mm512_xor_si512(s01, s23));
}

// REQUIRES: n >= 1.
MRC_VCLMUL_TARGET uint32_t crc_vclmul(const uint8_t* p, size_t n) {
  __m128i s;
  if (n <= 16) {
    const size_t pad = 16 - n;
    __m128i x = _mm_maskz_loadu_epi8(static_cast<__mmask16>(0xFFFFu << pad), before(p, pad));
    s = last_block(_mm_xor_si128(x, init_term128(pad)), 15);
  } else if (n <= 64) {
    s = short_vclmul<1>(p, n);
  } else if (n <= 128) {
    s = short_vclmul<2>(p, n);
  } else if (n <= 192) {
    s = short_vclmul<3>(p, n);
  } else if (n <= 256) {
    s = short_vclmul<4>(p, n);
  } else {
    s = long_vclmul(p, n);
  }
  // Clean upper register state before the 128-bit code that follows (and the caller's
  // legacy-SSE code); GCC does not insert this itself here.
  _mm256_zeroupper();
  return ~barrett(s);
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
  return ~update_tables(kInitRegister, bytes.data(), bytes.size());
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
  if (bytes.size() >= 16) return crc_clmul(bytes.data(), bytes.size());
#endif
  return icrc32_portable(bytes);
}

uint32_t icrc32_vclmul(std::span<const uint8_t> bytes) {
  MRC_ASSERT(vclmul_available());
#if MRC_ICRC_X86
  if (!bytes.empty()) return crc_vclmul(bytes.data(), bytes.size());
#endif
  return icrc32_portable(bytes);
}

}  // namespace detail

uint32_t icrc32(std::span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  const size_t n = bytes.size();
#if MRC_ICRC_X86
  const Engine e = engine();
  if (e == Engine::kVclmul && n >= kVclmulMinBytes) return crc_vclmul(p, n);
  if (e == Engine::kClmul && n >= kClmulMinBytes) return crc_clmul(p, n);
#endif
  return ~update_tables(kInitRegister, p, n);
}

}  // namespace mrc::wire
