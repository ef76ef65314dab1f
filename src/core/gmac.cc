// AES-128-GMAC with an AES-NI block function under OpenSSL's GCM mode (see gmac.h).
#include "core/gmac.h"

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

}  // namespace

struct Gmac::State {
  RoundKeys keys;
  GCM128_CONTEXT* gcm = nullptr;
  ~State() {
    if (gcm != nullptr) CRYPTO_gcm128_release(gcm);  // wipes H and the tables
    OPENSSL_cleanse(&keys, sizeof keys);
  }
};

bool Gmac::available() {
  static const bool aes = __builtin_cpu_supports("aes") != 0;
  return aes;
}

Gmac::Gmac(std::span<const uint8_t, 16> key) : state_(std::make_unique<State>()) {
  MRC_ASSERT(available());
  expand_key(key.data(), state_->keys);
  state_->gcm = CRYPTO_gcm128_new(&state_->keys, encrypt_block);
  MRC_ASSERT(state_->gcm != nullptr);
}

Gmac::Gmac(Gmac&&) noexcept = default;
Gmac& Gmac::operator=(Gmac&&) noexcept = default;
Gmac::~Gmac() = default;

// The key schedule lives in State, so the context's pointer to it survives a move of Gmac.
void Gmac::start(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> first,
                 std::span<const uint8_t> second) {
  GCM128_CONTEXT* gcm = state_->gcm;
  CRYPTO_gcm128_setiv(gcm, nonce.data(), nonce.size());
  // Associated data only: aad() fails only after plaintext or past GCM's 2^61-byte limit.
  int failed = CRYPTO_gcm128_aad(gcm, first.data(), first.size());
  if (!second.empty()) failed |= CRYPTO_gcm128_aad(gcm, second.data(), second.size());
  MRC_ASSERT(failed == 0);
}

void Gmac::tag(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> first,
               std::span<const uint8_t> second, std::span<uint8_t, 16> out) {
  start(nonce, first, second);
  CRYPTO_gcm128_tag(state_->gcm, out.data(), out.size());
}

bool Gmac::verify(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> first,
                  std::span<const uint8_t> second, std::span<const uint8_t, 16> expected) {
  start(nonce, first, second);
  return CRYPTO_gcm128_finish(state_->gcm, expected.data(), expected.size()) == 0;
}

}  // namespace mrc
