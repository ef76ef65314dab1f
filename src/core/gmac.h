// AES-128-GMAC (AES-GCM with no plaintext: every byte is associated data) for secure mode's
// authenticate-only packets, without OpenSSL's EVP layer.
//
// Through EVP, each packet pays for OpenSSL 3.0's provider parameters (setting the nonce and
// taking the tag look their names up by string) about as much as for hashing a 4 KiB payload.
// GMAC needs AES for two blocks per key and per packet only (the hash key H = AES(K, 0) and the
// pad AES(K, nonce | 1)); the per-byte work is GHASH. So this class keeps OpenSSL's GCM mode
// and its carry-less-multiply GHASH (CRYPTO_gcm128_*, <openssl/modes.h>) and gives it an AES-NI
// block function of its own: AES-128's key expansion and one block's ten rounds, the textbook
// AES-NI sequence. The tags are GCM's, byte for byte (tests check them against EVP).
// available() is false on a CPU without AES-NI; callers then use EVP.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>

namespace mrc {

class Gmac {
 public:
  static bool available();
  // REQUIRES: available().
  explicit Gmac(std::span<const uint8_t, 16> key);
  Gmac(Gmac&&) noexcept;
  Gmac& operator=(Gmac&&) noexcept;
  ~Gmac();  // wipes the key schedule

  // The tag over first | second under the 12-byte nonce.
  void tag(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> first,
           std::span<const uint8_t> second, std::span<uint8_t, 16> out);
  // Whether `expected` is that tag (compared in constant time).
  bool verify(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> first,
              std::span<const uint8_t> second, std::span<const uint8_t, 16> expected);

 private:
  void start(std::span<const uint8_t, 12> nonce, std::span<const uint8_t> first,
             std::span<const uint8_t> second);

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mrc
