// AES-128-GCM packet protection, key epochs and replay protection (see packet_protection.h).
#include "core/packet_protection.h"

#include <openssl/evp.h>

#include <cstring>

#include "core/wire/packet.h"
#include "mrc/assert.hpp"
#include "util/bytes.h"

namespace mrc {

// ---- GcmKey ----------------------------------------------------------------------------------

struct GcmKey::Context {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  ~Context() { EVP_CIPHER_CTX_free(ctx); }
};

GcmKey::GcmKey(const PacketKeys& keys, SecureMode mode, bool sealing, bool evp_only)
    : encrypt_(mode == SecureMode::kEncrypt), iv_(keys.iv) {
  MRC_ASSERT(mode != SecureMode::kOff);
  if (!evp_only && (encrypt_ ? AesGcm::encrypts() : AesGcm::available())) {
    aes_gcm_ = std::make_unique<AesGcm>(keys.key);
    return;
  }
  context_ = std::make_unique<Context>();
  MRC_ASSERT(context_->ctx != nullptr);
  const int ok = EVP_CipherInit_ex(context_->ctx, EVP_aes_128_gcm(), nullptr, keys.key.data(),
                                   nullptr, sealing ? 1 : 0);
  MRC_ASSERT(ok == 1);
}

GcmKey::GcmKey(GcmKey&&) noexcept = default;
GcmKey& GcmKey::operator=(GcmKey&&) noexcept = default;
GcmKey::~GcmKey() = default;

std::array<uint8_t, kPacketIvBytes> GcmKey::nonce(uint64_t nonce_low) const {
  std::array<uint8_t, kPacketIvBytes> n = iv_;
  for (int i = 0; i < 8; ++i)
    n[kPacketIvBytes - 1 - i] ^= static_cast<uint8_t>(nonce_low >> (8 * i));
  return n;
}

// One EVP call sequence per packet, on a context keyed once: set the nonce, feed the associated
// data, then the payload (through the cipher into `out`, or with `out` null as more associated
// data), then take the tag (sealing) or check it (opening).
bool GcmKey::run(uint64_t nonce_low, std::span<const uint8_t> aad, std::span<const uint8_t> payload,
                 uint8_t* out, uint8_t* tag, bool sealing) {
  EVP_CIPHER_CTX* ctx = context_->ctx;
  const auto n = nonce(nonce_low);
  int length = 0;
  bool ok = EVP_CipherInit_ex(ctx, nullptr, nullptr, nullptr, n.data(), -1) == 1;
  ok = ok && EVP_CipherUpdate(ctx, nullptr, &length, aad.data(), static_cast<int>(aad.size())) == 1;
  if (!payload.empty())
    ok = ok &&
         EVP_CipherUpdate(ctx, out, &length, payload.data(), static_cast<int>(payload.size())) == 1;
  const int tag_bytes = static_cast<int>(wire::kTagBytes);
  if (!sealing) ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, tag_bytes, tag) == 1;
  std::array<uint8_t, 16> unused{};
  ok = ok && EVP_CipherFinal_ex(ctx, unused.data(), &length) == 1;
  if (sealing) ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, tag_bytes, tag) == 1;
  return ok;
}

void GcmKey::seal(uint64_t nonce_low, std::span<const uint8_t> aad, std::span<uint8_t> payload,
                  std::span<uint8_t> tag) {
  MRC_ASSERT(tag.size() == wire::kTagBytes);
  if (aes_gcm_ && encrypt_) {
    aes_gcm_->seal(nonce(nonce_low), aad, payload, tag.first<wire::kTagBytes>());
    return;
  }
  if (aes_gcm_) {
    aes_gcm_->tag(nonce(nonce_low), aad, payload, tag.first<wire::kTagBytes>());
    return;
  }
  const bool ok = run(nonce_low, aad, payload, encrypt_ ? payload.data() : nullptr, tag.data(),
                      /*sealing=*/true);
  MRC_ASSERT(ok);
}

bool GcmKey::open(uint64_t nonce_low, std::span<const uint8_t> aad,
                  std::span<const uint8_t> payload, std::span<const uint8_t> tag,
                  std::span<uint8_t> out) {
  MRC_ASSERT((!encrypt_ || out.size() == payload.size()) && tag.size() == wire::kTagBytes);
  const auto expected = tag.first<wire::kTagBytes>();
  if (aes_gcm_ && encrypt_) return aes_gcm_->open(nonce(nonce_low), aad, payload, expected, out);
  if (aes_gcm_) return aes_gcm_->verify(nonce(nonce_low), aad, payload, expected);
  // OpenSSL takes the expected tag through a non-const pointer; it only reads it.
  auto* evp_tag =
      const_cast<uint8_t*>(tag.data());  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  return run(nonce_low, aad, payload, encrypt_ ? out.data() : nullptr, evp_tag, false);
}

// ---- PacketProtection ------------------------------------------------------------------------

namespace {

constexpr uint64_t kCounterMask = (uint64_t{1} << 48) - 1;

// Epoch (16 bits) above the 48-bit counter: the nonce's low 64 bits and the SECH's 8 bytes.
uint64_t nonce_low(uint16_t epoch, uint64_t counter) {
  return (uint64_t{epoch} << 48) | (counter & kCounterMask);
}

// The plain headers' length of a secure datagram (0 if it is too short for them, its SECH and
// its tag), and the plain datagram's length.
struct Layout {
  size_t header = 0;
  size_t plain_length = 0;
  size_t payload_bytes() const { return plain_length - wire::kIcrcBytes - header; }
};
Layout layout_of(std::span<const uint8_t> secure) {
  constexpr size_t kMinBytes = wire::kBthBytes + kSecureOverheadBytes + wire::kIcrcBytes;
  if (secure.size() < kMinBytes) return {};
  const size_t plain_length = secure.size() - kSecureOverheadBytes;
  const size_t header = wire::plain_header_bytes(secure.first(plain_length));
  return header < wire::kBthBytes ? Layout{} : Layout{header, plain_length};
}

// BTH (S cleared) and extension headers into `plain`.
void copy_plain_headers(std::span<const uint8_t> secure, size_t header, std::span<uint8_t> plain) {
  std::memcpy(plain.data(), secure.data(), wire::kBthBytes);
  plain[8] &= static_cast<uint8_t>(~wire::kBthSecureFlag);
  std::memcpy(plain.data() + wire::kBthBytes, secure.data() + wire::kBthBytes + wire::kSechBytes,
              header - wire::kBthBytes);
}

}  // namespace

Sech read_sech(std::span<const uint8_t> secure) {
  MRC_ASSERT(secure.size() >= wire::kBthBytes + wire::kSechBytes);
  const uint64_t v = load_be64(secure.data() + wire::kBthBytes);
  return Sech{static_cast<uint16_t>(v >> 48), v & kCounterMask};
}

size_t unprotected_view(std::span<const uint8_t> secure, std::span<uint8_t> out) {
  const Layout l = layout_of(secure);
  if (l.header == 0) return 0;
  MRC_ASSERT(out.size() >= secure.size());
  copy_plain_headers(secure, l.header, out);
  std::memcpy(out.data() + l.header, secure.data() + l.header + wire::kSechBytes,
              l.payload_bytes());
  return wire::seal_deferred(out, l.plain_length - wire::kIcrcBytes);
}

PacketProtection::ReceiveEpoch PacketProtection::receive_epoch_from(const TrafficSecret& secret,
                                                                    uint16_t number) const {
  ReceiveEpoch epoch;
  epoch.valid = true;
  epoch.number = number;
  epoch.secret = secret;
  epoch.key = GcmKey(packet_keys(secret), mode_, /*sealing=*/false);
  return epoch;
}

PacketProtection::PacketProtection(const SecurityConfig& config)
    : mode_(config.mode), rekey_packets_(config.rekey_packets) {
  MRC_ASSERT(mode_ != SecureMode::kOff && rekey_packets_ >= 1 && rekey_packets_ <= kCounterMask);
  send_.secret = config.send_secret;
  send_.key = GcmKey(packet_keys(send_.secret), mode_, /*sealing=*/true);
  receive_[kCurrent] = receive_epoch_from(config.receive_secret, 0);
  receive_[kNext] = receive_epoch_from(next_epoch_secret(config.receive_secret), 1);
}

void PacketProtection::next_send_epoch() {
  send_.secret = next_epoch_secret(send_.secret);
  send_.key = GcmKey(packet_keys(send_.secret), mode_, /*sealing=*/true);
  ++send_.number;
  send_.packets = 0;
}

// The plain datagram's BTH moves to the front, the SECH takes the 8 bytes it left, and the
// extension headers and payload stay where the QP wrote them.
size_t PacketProtection::seal(std::span<uint8_t> out, size_t plain_length) {
  MRC_ASSERT(out.size() >= plain_length + kSecureOverheadBytes);
  if (send_.packets == rekey_packets_) next_send_epoch();
  const size_t header =
      wire::plain_header_bytes(out.subspan(wire::kSechBytes, plain_length)) + wire::kSechBytes;
  MRC_ASSERT(header > wire::kSechBytes);
  uint8_t* p = out.data();
  std::memmove(p, p + wire::kSechBytes, wire::kBthBytes);
  p[8] |= wire::kBthSecureFlag;
  store_be64(p + wire::kBthBytes, nonce_low(send_.number, send_.packets));  // the SECH
  const size_t payload_end = plain_length - wire::kIcrcBytes + wire::kSechBytes;
  const std::span<uint8_t> payload = out.subspan(header, payload_end - header);
  send_.key.seal(nonce_low(send_.number, send_.packets), out.first(header), payload,
                 out.subspan(payload_end, wire::kTagBytes));
  ++send_.packets;
  return wire::seal_deferred(out, payload_end + wire::kTagBytes);
}

PacketProtection::ReceiveEpoch* PacketProtection::epoch_for(uint16_t number) {
  for (Slot slot : {kCurrent, kNext, kPrevious}) {
    ReceiveEpoch& epoch = receive_[slot];
    if (epoch.valid && epoch.number == number) return &epoch;
  }
  const auto distance = static_cast<uint16_t>(number - receive_[kCurrent].number);
  return distance >= 2 && distance <= kEpochsAhead ? epoch_ahead(distance) : nullptr;
}

// The secret of the epoch `distance` (2..kEpochsAhead) past the current one.
const TrafficSecret& PacketProtection::secret_ahead(uint16_t distance) {
  for (; ahead_known_ < distance - 1; ++ahead_known_) {
    const TrafficSecret& before =
        ahead_known_ == 0 ? receive_[kNext].secret : ahead_[ahead_known_ - 1];
    ahead_[ahead_known_] = next_epoch_secret(before);
  }
  return ahead_[distance - 2];
}

PacketProtection::ReceiveEpoch* PacketProtection::epoch_ahead(uint16_t distance) {
  const auto number = static_cast<uint16_t>(receive_[kCurrent].number + distance);
  ReceiveEpoch& candidate = receive_[kAhead];
  if (!candidate.valid || candidate.number != number)
    candidate = receive_epoch_from(secret_ahead(distance), number);
  return &candidate;
}

// The epoch in `slot` (kNext or kAhead) becomes current; the one before it previous.
void PacketProtection::move_to(Slot slot) {
  const auto number = static_cast<uint16_t>(receive_[slot].number - 1);
  if (slot == kNext) {
    receive_[kPrevious] = std::move(receive_[kCurrent]);
  } else if (number == receive_[kNext].number) {
    receive_[kPrevious] = std::move(receive_[kNext]);
  } else {
    receive_[kPrevious] = receive_epoch_from(
        secret_ahead(static_cast<uint16_t>(number - receive_[kCurrent].number)), number);
  }
  receive_[kCurrent] = std::move(receive_[slot]);
  receive_[kAhead] = ReceiveEpoch{};
  ahead_known_ = 0;
  const ReceiveEpoch& current = receive_[kCurrent];
  receive_[kNext] = receive_epoch_from(next_epoch_secret(current.secret),
                                       static_cast<uint16_t>(current.number + 1));
}

// After a packet verified: its counter is taken, a first packet of a later epoch makes that
// epoch current, and the previous epoch is let go once the current one is a window in.
void PacketProtection::accepted(ReceiveEpoch* epoch, uint64_t counter) {
  epoch->window.accept(counter);
  if (epoch == &receive_[kNext]) move_to(kNext);
  if (epoch == &receive_[kAhead]) move_to(kAhead);
  if (receive_[kPrevious].valid && receive_[kCurrent].window.highest() >= ReplayWindow::kPackets)
    receive_[kPrevious] = ReceiveEpoch{};
}

Result<PacketProtection::Opened, SecurityDrop> PacketProtection::open(
    std::span<const uint8_t> datagram, std::span<uint8_t> plain) {
  const Layout l = layout_of(datagram);
  if (l.header == 0) return Err{SecurityDrop::kTruncated};
  MRC_ASSERT(plain.size() >= datagram.size());
  const Sech sech = read_sech(datagram);
  ReceiveEpoch* epoch = epoch_for(sech.epoch);
  if (epoch == nullptr) return Err{SecurityDrop::kOldKey};
  if (!epoch->window.fresh(sech.counter)) return Err{SecurityDrop::kReplay};
  const size_t secure_header = l.header + wire::kSechBytes;
  const size_t payload_end = secure_header + l.payload_bytes();
  const std::span<const uint8_t> payload = datagram.subspan(secure_header, l.payload_bytes());
  const std::span<uint8_t> decrypted = plain.subspan(l.header, l.payload_bytes());
  if (!epoch->key.open(nonce_low(sech.epoch, sech.counter), datagram.first(secure_header), payload,
                       datagram.subspan(payload_end, wire::kTagBytes), decrypted))
    return Err{SecurityDrop::kBadTag};
  accepted(epoch, sech.counter);
  copy_plain_headers(datagram, l.header, plain);
  const size_t length = wire::seal_deferred(plain, l.plain_length - wire::kIcrcBytes);
  return Opened{length, mode_ == SecureMode::kEncrypt ? decrypted : payload};
}

}  // namespace mrc
