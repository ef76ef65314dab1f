// AES-128-GCM: AES-NI and VAES functions of our own under OpenSSL's GCM mode (see aes_gcm.h).
#include "core/aes_gcm.h"

#include <cpuid.h>
#include <immintrin.h>
#include <openssl/crypto.h>
#include <openssl/modes.h>

#include "mrc/assert.hpp"

namespace mrc {

namespace {

struct RoundKeys {
  __m128i rk[11];
};

// One step of AES-128's key expansion: the next round key from the previous one and
// AESKEYGENASSIST's word (FIPS 197 §5.2, as Intel's AES-NI white paper writes it).
__attribute__((target("aes,sse2"))) __m128i expand_step(__m128i key, __m128i assist) {
  assist = _mm_shuffle_epi32(assist, 0xff);
  key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
  key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
  key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
  return _mm_xor_si128(key, assist);
}

// The round constants are immediates of AESKEYGENASSIST, hence one line per round.
__attribute__((target("aes,sse2"))) void expand_key(const uint8_t* key, RoundKeys& k) {
  __m128i* r = k.rk;
  r[0] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(key));
  r[1] = expand_step(r[0], _mm_aeskeygenassist_si128(r[0], 0x01));
  r[2] = expand_step(r[1], _mm_aeskeygenassist_si128(r[1], 0x02));
  r[3] = expand_step(r[2], _mm_aeskeygenassist_si128(r[2], 0x04));
  r[4] = expand_step(r[3], _mm_aeskeygenassist_si128(r[3], 0x08));
  r[5] = expand_step(r[4], _mm_aeskeygenassist_si128(r[4], 0x10));
  r[6] = expand_step(r[5], _mm_aeskeygenassist_si128(r[5], 0x20));
  r[7] = expand_step(r[6], _mm_aeskeygenassist_si128(r[6], 0x40));
  r[8] = expand_step(r[7], _mm_aeskeygenassist_si128(r[7], 0x80));
  r[9] = expand_step(r[8], _mm_aeskeygenassist_si128(r[8], 0x1b));
  r[10] = expand_step(r[9], _mm_aeskeygenassist_si128(r[9], 0x36));
}

// OpenSSL's block128_f: one block, `key` being our RoundKeys.
__attribute__((target("aes,sse2"))) void encrypt_block(const unsigned char in[16],
                                                       unsigned char out[16], const void* key) {
  const auto& k = *static_cast<const RoundKeys*>(key);
  __m128i b = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)), k.rk[0]);
  for (int round = 1; round < 10; ++round) b = _mm_aesenc_si128(b, k.rk[round]);
  b = _mm_aesenclast_si128(b, k.rk[10]);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), b);
}

#define MRC_VAES_TARGET __attribute__((target("aes,avx2,avx512f,avx512bw,avx512vl,vaes")))

// One 128-bit value in all four lanes (the zero-masked form: the plain intrinsic starts from an
// undefined register, which GCC 12's -Wuninitialized reports in unoptimized builds).
MRC_VAES_TARGET inline __m512i lanes4(__m128i v) {
  return _mm512_maskz_broadcast_i32x4(static_cast<__mmask16>(0xFFFF), v);
}

// Four counter blocks (a 512-bit register) through AES-128's rounds and XORed into 64 bytes
// of input; `bytes` (16, 32, 48 or 64) are read and written.
MRC_VAES_TARGET inline void ctr_x4(const __m512i (&rk)[11], __m512i counters, const uint8_t* in,
                                   uint8_t* out, size_t bytes) {
  __m512i b = _mm512_xor_si512(counters, rk[0]);
#pragma GCC unroll 9
  for (int round = 1; round < 10; ++round) b = _mm512_aesenc_epi128(b, rk[round]);
  b = _mm512_aesenclast_epi128(b, rk[10]);
  const __mmask64 mask = bytes == 64 ? ~__mmask64{0} : (__mmask64{1} << bytes) - 1;
  _mm512_mask_storeu_epi8(out, mask, _mm512_xor_si512(b, _mm512_maskz_loadu_epi8(mask, in)));
}

// OpenSSL's ctr128_f: `blocks` whole blocks of counter mode from the counter block `ivec`,
// whose last 32 bits count big-endian and wrap (GCM's inc32); `ivec` itself is left as it is.
// Each 128-bit lane holds one counter block with its counter word byte-swapped, so a 32-bit
// add counts; the swap is undone on the way into the rounds. Successive registers do not
// depend on one another, so the core overlaps their rounds.
MRC_VAES_TARGET void ctr32_vaes(const unsigned char* in, unsigned char* out, size_t blocks,
                                const void* key, const unsigned char ivec[16]) {
  const auto& k = *static_cast<const RoundKeys*>(key);
  __m512i rk[11];
#pragma GCC unroll 11
  for (int i = 0; i < 11; ++i) rk[i] = lanes4(k.rk[i]);
  const __m512i swap = lanes4(_mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15, 14, 13, 12));
  const __m512i first = lanes4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ivec)));
  __m512i counter =
      _mm512_add_epi32(_mm512_shuffle_epi8(first, swap),
                       _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3));
  const __m512i four = _mm512_setr_epi32(0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4);
  for (; blocks > 0; counter = _mm512_add_epi32(counter, four)) {
    const size_t n = blocks < 4 ? blocks : 4;
    ctr_x4(rk, _mm512_shuffle_epi8(counter, swap), in, out, 16 * n);
    blocks -= n;
    in += 16 * n;
    out += 16 * n;
  }
}

bool leaf7_ecx_bit(unsigned bit) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && ((ecx >> bit) & 1U) != 0;
}

}  // namespace

struct AesGcm::State {
  RoundKeys keys;
  GCM128_CONTEXT* gcm = nullptr;
  ~State() {
    if (gcm != nullptr) CRYPTO_gcm128_release(gcm);  // wipes H and the tables
    OPENSSL_cleanse(&keys, sizeof keys);
  }
};

bool AesGcm::available() {
  static const bool aes = __builtin_cpu_supports("aes") != 0;
  return aes;
}

bool AesGcm::encrypts() {
  // VAES is CPUID leaf 7's ECX bit 9 (read directly: not every compiler's
  // __builtin_cpu_supports knows it); the AVX-512 checks include the OS's register state.
  static const bool vaes =
      available() && leaf7_ecx_bit(9) && __builtin_cpu_supports("avx512f") != 0 &&
      __builtin_cpu_supports("avx512bw") != 0 && __builtin_cpu_supports("avx512vl") != 0;
  return vaes;
}

AesGcm::AesGcm(std::span<const uint8_t, 16> key) : state_(std::make_unique<State>()) {
  MRC_ASSERT(available());
  expand_key(key.data(), state_->keys);
  state_->gcm = CRYPTO_gcm128_new(&state_->keys, encrypt_block);
  MRC_ASSERT(state_->gcm != nullptr);
}

AesGcm::AesGcm(AesGcm&&) noexcept = default;
AesGcm& AesGcm::operator=(AesGcm&&) noexcept = default;
AesGcm::~AesGcm() = default;

// The key schedule lives in State, so the context's pointer to it survives a move of AesGcm.
void AesGcm::start(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> first,
                   std::span<const uint8_t> second) {
  GCM128_CONTEXT* gcm = state_->gcm;
  CRYPTO_gcm128_setiv(gcm, nonce.data(), nonce.size());
  // Associated data only: aad() fails only after plaintext or past GCM's 2^61-byte limit.
  int failed = CRYPTO_gcm128_aad(gcm, first.data(), first.size());
  if (!second.empty()) failed |= CRYPTO_gcm128_aad(gcm, second.data(), second.size());
  MRC_ASSERT(failed == 0);
}

void AesGcm::tag(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> first,
                 std::span<const uint8_t> second, std::span<uint8_t, 16> out) {
  start(nonce, first, second);
  CRYPTO_gcm128_tag(state_->gcm, out.data(), out.size());
}

bool AesGcm::verify(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> first,
                    std::span<const uint8_t> second, std::span<const uint8_t, 16> expected) {
  start(nonce, first, second);
  return CRYPTO_gcm128_finish(state_->gcm, expected.data(), expected.size()) == 0;
}

// encrypt_ctr32 and decrypt_ctr32 fail only past GCM's plaintext limit (2^36 - 32 bytes).
void AesGcm::seal(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> aad,
                  std::span<uint8_t> payload, std::span<uint8_t, 16> out) {
  MRC_ASSERT(encrypts());
  start(nonce, aad, {});
  const int failed = CRYPTO_gcm128_encrypt_ctr32(state_->gcm, payload.data(), payload.data(),
                                                 payload.size(), ctr32_vaes);
  MRC_ASSERT(failed == 0);
  CRYPTO_gcm128_tag(state_->gcm, out.data(), out.size());
}

bool AesGcm::open(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> aad,
                  std::span<const uint8_t> payload, std::span<const uint8_t, 16> expected,
                  std::span<uint8_t> plain) {
  MRC_ASSERT(encrypts() && plain.size() == payload.size());
  start(nonce, aad, {});
  const int failed = CRYPTO_gcm128_decrypt_ctr32(state_->gcm, payload.data(), plain.data(),
                                                 payload.size(), ctr32_vaes);
  MRC_ASSERT(failed == 0);
  return CRYPTO_gcm128_finish(state_->gcm, expected.data(), expected.size()) == 0;
}

}  // namespace mrc
