// AES-128-GCM for secure mode's packets, without OpenSSL's EVP layer.
//
// Through EVP, each packet pays for OpenSSL 3.0's provider parameters (setting the nonce and
// taking the tag look their names up by string) about as much as for hashing a 4 KiB payload,
// and 3.0's AES-GCM has no VAES code: its AES runs one 128-bit block per instruction. This
// class keeps OpenSSL's GCM mode and its carry-less-multiply GHASH (CRYPTO_gcm128_*,
// <openssl/modes.h>), which compute the tags, and gives it two functions of its own:
//   - an AES-NI block function (AES-128's key expansion and one block's ten rounds, the
//     textbook AES-NI sequence), which is all authenticate-only packets need (GMAC: AES of the
//     hash key and of the nonce's pad; the rest is GHASH);
//   - a counter-mode function for encrypted payloads, on CPUs with VAES and AVX-512: four
//     counter blocks per 512-bit register, each AES instruction a round of all four.
// Tags and ciphertexts are GCM's, byte for byte (tests check them against EVP). available() is
// false on a CPU without AES-NI, encrypts() on one without VAES; callers then use EVP.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>

namespace mrc {

class AesGcm {
 public:
  // AES-NI: tag() and verify().
  static bool available();
  // VAES with AVX-512 as well: seal() and open().
  static bool encrypts();
  // REQUIRES: available().
  explicit AesGcm(std::span<const uint8_t, 16> key);
  AesGcm(AesGcm&&) noexcept;
  AesGcm& operator=(AesGcm&&) noexcept;
  ~AesGcm();  // wipes the key schedule

  // GMAC: the tag over first | second (associated data only) under the 12-byte nonce.
  void tag(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> first,
           std::span<const uint8_t> second, std::span<uint8_t, 16> out);
  // Whether `expected` is that tag (compared in constant time).
  bool verify(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> first,
              std::span<const uint8_t> second, std::span<const uint8_t, 16> expected);

  // REQUIRES: encrypts(). Encrypts `payload` in place, after `aad`; the tag goes to `out`.
  void seal(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> aad,
            std::span<uint8_t> payload, std::span<uint8_t, 16> out);
  // REQUIRES: encrypts(), plain.size() == payload.size(). Decrypts `payload` into `plain` and
  // checks `expected`; false if it is not the tag (`plain` then holds nothing to use).
  bool open(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> aad,
            std::span<const uint8_t> payload, std::span<const uint8_t, 16> expected,
            std::span<uint8_t> plain);

 private:
  void start(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> first,
             std::span<const uint8_t> second);

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mrc
