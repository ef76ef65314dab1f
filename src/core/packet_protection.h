// Packet protection of a secure QP: AES-128-GCM per packet, the key epochs and replay
// protection (docs/PROTOCOL.md, "Secure packets").
//
// A secure datagram is the plain one with the BTH's S flag set, an 8-byte security header
// (SECH: 16-bit key epoch, 48-bit packet counter) right after the BTH, and a 16-byte tag before
// the ICRC:
//   BTH(S) | SECH | extension headers | payload | tag | ICRC
// The tag covers everything before it: BTH, SECH and extension headers as associated data, and
// the payload either as associated data too (kAuthenticate) or encrypted (kEncrypt). The GCM
// nonce is the epoch's IV xor (epoch, counter); each direction counts its packets from 0 in
// every epoch, retransmissions included, so a nonce never repeats under one key.
//
// The sender moves to the next epoch after SecurityConfig::rekey_packets packets. The receiver
// holds the current epoch, the next (so the sender may move on at any packet) and, for packets
// reordered across the change, the previous one until the current epoch is a replay window in;
// a packet may also claim an epoch up to kEpochsAhead on (its sender's packets of the epochs
// between were all lost). Older epochs are refused: a packet sent under an old key no longer
// opens.
//
// open() decides before anything else is touched: a packet that does not verify changes
// neither the QP nor this object's state (the replay window and the epochs move only after the
// tag matched; a packet claiming a later epoch may only fill the cache of its keys). Every failure
// is a counted reason (SecurityDrop), and the caller sends no answer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/aes_gcm.h"
#include "core/key_schedule.h"
#include "core/replay_window.h"
#include "core/wire/packet.h"
#include "mrc/config.hpp"
#include "mrc/result.hpp"
#include "mrc/stats.hpp"

namespace mrc {

static_assert(kSecureOverheadBytes == wire::kSechBytes + wire::kTagBytes);

// One AES-128-GCM key, ready for per-packet use in one secure mode: core/aes_gcm.h's AES-NI
// GMAC for kAuthenticate (payloads are associated data) and its VAES counter mode for kEncrypt,
// or, on a CPU without what the mode needs there, an OpenSSL EVP cipher context keyed once.
class GcmKey {
 public:
  GcmKey() = default;
  // `sealing`: this key seals (else it opens); `evp_only`: EVP for every packet whatever the
  // CPU has (what a CPU without AES-NI or VAES runs, so tests can check it anywhere).
  // REQUIRES: mode != kOff.
  GcmKey(const PacketKeys& keys, SecureMode mode, bool sealing, bool evp_only = false);
  GcmKey(GcmKey&&) noexcept;
  GcmKey& operator=(GcmKey&&) noexcept;
  ~GcmKey();

  // Seals in place: the tag over aad | payload goes to `tag`; in kEncrypt the payload is
  // encrypted in place, in kAuthenticate it is associated data.
  void seal(uint64_t nonce_low, std::span<const uint8_t> aad, std::span<uint8_t> payload,
            std::span<uint8_t> tag);
  // Verifies; in kEncrypt also decrypts into `out` (out.size() == payload.size()), which holds
  // nothing to use if it returns false (the tag does not match). kAuthenticate leaves `out` be.
  bool open(uint64_t nonce_low, std::span<const uint8_t> aad, std::span<const uint8_t> payload,
            std::span<const uint8_t> tag, std::span<uint8_t> out);

 private:
  std::array<uint8_t, kPacketIvBytes> nonce(uint64_t nonce_low) const;
  bool run(uint64_t nonce_low, std::span<const uint8_t> aad, std::span<const uint8_t> payload,
           uint8_t* out, uint8_t* tag, bool sealing);

  struct Context;
  std::unique_ptr<Context> context_;  // EVP, where the CPU lacks what AesGcm needs for the mode
  std::unique_ptr<AesGcm> aes_gcm_;   // AES-NI (kAuthenticate) or VAES (kEncrypt) present
  bool encrypt_ = false;              // the payload is encrypted (kEncrypt)
  std::array<uint8_t, kPacketIvBytes> iv_{};
};

// A secure datagram's SECH, and the plain datagram it wraps as decoding tools show it,
// unverified: BTH with S cleared, the extension headers, the payload as on the wire (the
// ciphertext in encrypt mode), ICRC field zero. unprotected_view returns its length, or 0 if
// `secure` is too short for its headers, SECH and tag. REQUIRES: out.size() >= secure.size().
struct Sech {
  uint16_t epoch = 0;
  uint64_t counter = 0;
};
Sech read_sech(std::span<const uint8_t> secure);  // REQUIRES: secure.size() >= BTH + SECH
size_t unprotected_view(std::span<const uint8_t> secure, std::span<uint8_t> out);

class PacketProtection {
 public:
  // How far past its current epoch a receiver follows a sender: a sender whose packets of
  // whole epochs were all lost (rekey_packets each) is still understood up to this many on.
  static constexpr uint16_t kEpochsAhead = 16;

  explicit PacketProtection(const SecurityConfig& config);

  // Seals the plain datagram that lies at out[kSechBytes, kSechBytes + plain_length) (its ICRC
  // field last, left zero) into a secure one from out[0]; returns its length, plain_length +
  // kSecureOverheadBytes, the ICRC field zero. REQUIRES: out.size() >= that.
  size_t seal(std::span<uint8_t> out, size_t plain_length);

  // What open() gives: the plain datagram's length in `plain`, and where its payload is. An
  // encrypted payload is decrypted into `plain`; an authenticated-only one is not copied: it
  // stays in the secure datagram, and `plain`'s payload bytes are left unwritten.
  struct Opened {
    size_t length = 0;
    std::span<const uint8_t> payload;
  };
  // Verifies the secure `datagram` (whose ICRC the caller checked) and writes the plain
  // datagram's headers (S flag cleared) and ICRC field (zero) into `plain`.
  // REQUIRES: plain.size() >= datagram.size().
  Result<Opened, SecurityDrop> open(std::span<const uint8_t> datagram, std::span<uint8_t> plain);

  uint16_t send_epoch() const { return send_.number; }
  uint16_t receive_epoch() const { return receive_[kCurrent].number; }

 private:
  struct SendEpoch {
    uint16_t number = 0;
    TrafficSecret secret{};
    GcmKey key;
    uint64_t packets = 0;
  };
  struct ReceiveEpoch {
    bool valid = false;
    uint16_t number = 0;
    TrafficSecret secret{};
    GcmKey key;
    ReplayWindow window;
  };
  // kAhead: a candidate epoch 2..kEpochsAhead past the current one, for a packet that claims it.
  enum Slot : uint8_t { kPrevious, kCurrent, kNext, kAhead };

  ReceiveEpoch receive_epoch_from(const TrafficSecret& secret, uint16_t number) const;
  void next_send_epoch();
  ReceiveEpoch* epoch_for(uint16_t number);
  ReceiveEpoch* epoch_ahead(uint16_t distance);
  const TrafficSecret& secret_ahead(uint16_t distance);
  void move_to(Slot slot);
  void accepted(ReceiveEpoch* epoch, uint64_t counter);

  SecureMode mode_;
  uint64_t rekey_packets_;
  SendEpoch send_;
  std::array<ReceiveEpoch, 4> receive_;
  // The secrets of the epochs 2, 3, ... past the current one, derived when first asked for (at
  // most kEpochsAhead - 1 per current epoch, so a packet claiming a far epoch costs no more
  // than one key set-up).
  std::array<TrafficSecret, kEpochsAhead - 1> ahead_{};
  uint16_t ahead_known_ = 0;
};

}  // namespace mrc
