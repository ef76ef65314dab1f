// Connection set-up's key exchange for secure QPs (QpConfig::security): the two ends of a QP
// agree on its traffic secrets over the out-of-band channel that already carries QPNs and PSNs.
//
// Each end draws an ephemeral X25519 key pair and a 16-byte nonce for the QP and publishes an
// offer: its secure mode, the id of its pre-shared key (a fingerprint, so that a mismatch is
// named at once), its public key and nonce, and a proof: HMAC-SHA256 under the pre-shared key
// over the mode, its QPN and PSN and its share. The peer checks mode, key id and proof, so a
// key that differs, or an offer that someone without the key made or altered, fails at
// connection time with both ends named. Both then compute the X25519 shared secret and derive
// the QP's traffic secrets from it and the pre-shared key (core/key_schedule.h,
// derive_traffic_secrets), over a transcript of both offers in an order both see the same (the
// smaller public key first). The ephemeral keys give forward secrecy: a pre-shared key that
// leaks later does not open recorded traffic.
//
// No I/O, but randomness of its own (OpenSSL's generator), which is why this is not part of the
// sans-IO engine: the host layer (host/queue_pairs.h), `mrc perf` and the in-band agreement
// (secure/inband_keys.h) run it and carry the offers.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mrc/config.hpp"
#include "mrc/datapath.hpp"
#include "mrc/error.hpp"
#include "mrc/result.hpp"

namespace mrc {
class QueuePair;
}  // namespace mrc

namespace mrc::secure {

// read_key_file and kMinPresharedKeyBytes: include/mrc/datapath.hpp; the pre-shared key a
// host's secure mode needs, read from its key file: host::preshared_key_for (host/options.h).

// What one end of a QP publishes; every field is text for the out-of-band channel.
struct KeyOffer {
  SecureMode mode = SecureMode::kOff;
  std::string key_id;  // 16 hex digits: the pre-shared key's fingerprint
  std::string share;   // 96 hex digits: X25519 public key (32 bytes) | nonce (16 bytes)
  std::string proof;   // 64 hex digits: HMAC-SHA256(key, mode | qpn | psn | share)
};

// Both ends must ask for the same secure mode; the error names both.
Result<Ok, Error> check_secure_modes(SecureMode local, SecureMode peer,
                                     const std::string& peer_name);

class KeyExchange {
 public:
  // A fresh key pair and nonce (OpenSSL's random generator) for one QP under `key`.
  static Result<KeyExchange, Error> start(SecureMode mode, std::span<const uint8_t> key);
  KeyExchange(KeyExchange&&) noexcept;
  KeyExchange& operator=(KeyExchange&&) noexcept;
  ~KeyExchange();

  KeyOffer offer(uint32_t qpn, uint32_t psn) const;
  // The QP's SecurityConfig, from this end's (qpn, psn) and the peer's offer for (peer_qpn,
  // peer_psn); `peer_name` (an address, a rank) goes into the errors.
  Result<SecurityConfig, Error> finish(uint32_t qpn, uint32_t psn, const KeyOffer& peer,
                                       uint32_t peer_qpn, uint32_t peer_psn,
                                       const std::string& peer_name) const;
  // finish() for `qp` (in RESET, whose initial PSN is `psn`), its keys then set in its
  // configuration; the error names the peer, or what the QP refused.
  Result<Ok, Error> finish_for(QueuePair& qp, uint32_t psn, const KeyOffer& peer, uint32_t peer_qpn,
                               uint32_t peer_psn, const std::string& peer_name) const;

 private:
  KeyExchange() = default;
  std::string proof(SecureMode mode, uint32_t qpn, uint32_t psn, const std::string& share) const;
  std::string own_share() const;

  struct Pair;
  std::unique_ptr<Pair> pair_;  // the ephemeral X25519 key pair
  SecureMode mode_ = SecureMode::kOff;
  std::vector<uint8_t> key_;
  std::array<uint8_t, 32> public_key_{};
  std::array<uint8_t, 16> nonce_{};
};

}  // namespace mrc::secure
