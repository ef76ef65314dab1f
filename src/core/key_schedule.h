// The key schedule of secure QPs: HKDF-SHA256 (RFC 5869) with labelled expansion in the manner
// of TLS 1.3 and QUIC (RFC 8446 §7.1: "mrc " + label, and a context), over OpenSSL's HMAC.
//
// A QP direction starts from a 32-byte traffic secret that connection set-up gives it
// (derive_traffic_secrets: from a key exchange's shared secret or a pre-shared key, and both
// ends' random nonces and QPNs). Each key epoch has its own secret; its AES-128-GCM key and IV
// follow from it ("key", "iv"), and the next epoch's secret follows from it too ("ku", as QUIC's
// key update), so that a key that leaks does not give away the epochs before it. Pure functions:
// no state, no randomness, no system calls.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "mrc/config.hpp"

namespace mrc {

using TrafficSecret = std::array<uint8_t, kTrafficSecretBytes>;
inline constexpr size_t kPacketKeyBytes = 16;  // AES-128
inline constexpr size_t kPacketIvBytes = 12;   // the GCM nonce

struct PacketKeys {
  std::array<uint8_t, kPacketKeyBytes> key{};
  std::array<uint8_t, kPacketIvBytes> iv{};
};

// HKDF-Extract: a pseudorandom key from input keying material and a salt.
TrafficSecret hkdf_extract(std::span<const uint8_t> salt, std::span<const uint8_t> ikm);
// HKDF-Expand-Label: `out.size()` (at most 255 x 32) bytes from `secret` for `label`.
void hkdf_expand_label(const TrafficSecret& secret, std::string_view label,
                       std::span<const uint8_t> context, std::span<uint8_t> out);

PacketKeys packet_keys(const TrafficSecret& epoch_secret);
// Overwrites a secret with zeros in a way the compiler keeps (OPENSSL_cleanse).
void wipe(TrafficSecret& secret);
TrafficSecret next_epoch_secret(const TrafficSecret& epoch_secret);

// The traffic secrets of one connection, from what its set-up agreed: `shared` (a key
// exchange's shared secret, or a pre-shared key) and the transcript of the exchange (both
// ends' nonces, QPNs and public values, in an order both ends agree on). The end that `is_a`
// sends under the "a" secret; the other under "b".
struct TrafficSecrets {
  TrafficSecret a_to_b{};
  TrafficSecret b_to_a{};
};
TrafficSecrets derive_traffic_secrets(std::span<const uint8_t> shared,
                                      std::span<const uint8_t> transcript);

}  // namespace mrc
