// The key exchange of secure QPs (see key_exchange.h): X25519 through OpenSSL's EVP_PKEY,
// proofs with HMAC-SHA256, traffic secrets from core/key_schedule.h.
#include "secure/key_exchange.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "core/key_schedule.h"
#include "core/queue_pair.h"
#include "util/hex.h"

namespace mrc::secure {
namespace {

constexpr size_t kPublicBytes = 32;
constexpr size_t kNonceBytes = 16;
constexpr size_t kShareBytes = kPublicBytes + kNonceBytes;

std::vector<uint8_t> hmac(std::span<const uint8_t> key, std::span<const uint8_t> data) {
  std::vector<uint8_t> out(32);
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data.data(), data.size(), out.data(),
       &length);
  out.resize(length);
  return out;
}

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// The fingerprint of a pre-shared key: 8 bytes of HMAC(key, "mrc key id").
std::string key_id_of(std::span<const uint8_t> key) {
  static constexpr std::string_view kLabel = "mrc key id";
  const std::vector<uint8_t> label(kLabel.begin(), kLabel.end());
  const std::vector<uint8_t> digest = hmac(key, label);
  return to_hex(std::span(digest).first(8));
}

}  // namespace

Result<Ok, Error> check_secure_modes(SecureMode local, SecureMode peer,
                                     const std::string& peer_name) {
  if (local == peer) return Ok{};
  return fail(Errc::kInvalidArgument, std::string("secure mode differs: this end is '") +
                                          to_string(local) + "', the peer (" + peer_name +
                                          ") is '" + to_string(peer) +
                                          "': both ends need the same secure mode");
}

struct KeyExchange::Pair {
  EVP_PKEY* key = nullptr;
  ~Pair() { EVP_PKEY_free(key); }
};

KeyExchange::KeyExchange(KeyExchange&&) noexcept = default;
KeyExchange& KeyExchange::operator=(KeyExchange&&) noexcept = default;
KeyExchange::~KeyExchange() {
  if (!key_.empty()) OPENSSL_cleanse(key_.data(), key_.size());
}

Result<KeyExchange, Error> KeyExchange::start(SecureMode mode, std::span<const uint8_t> key) {
  if (mode == SecureMode::kOff) return fail(Errc::kInvalidArgument, "secure mode is off");
  if (key.size() < kMinPresharedKeyBytes)
    return fail(Errc::kInvalidArgument, "secure mode needs a pre-shared key of at least 16 bytes");
  KeyExchange x;
  x.mode_ = mode;
  x.key_.assign(key.begin(), key.end());
  x.pair_ = std::make_unique<Pair>();
  x.pair_->key = EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519");
  size_t length = kPublicBytes;
  if (x.pair_->key == nullptr ||
      EVP_PKEY_get_raw_public_key(x.pair_->key, x.public_key_.data(), &length) != 1 ||
      length != kPublicBytes || RAND_bytes(x.nonce_.data(), kNonceBytes) != 1)
    return fail(Errc::kUnsupported, "X25519 key generation failed (OpenSSL)");
  return x;
}

std::string KeyExchange::own_share() const {
  return to_hex(public_key_) + to_hex(nonce_);
}

std::string KeyExchange::proof(SecureMode mode, uint32_t qpn, uint32_t psn,
                               const std::string& share) const {
  std::vector<uint8_t> data{'m', 'r', 'c', ' ', 'o',
                            'f', 'f', 'e', 'r', static_cast<uint8_t>(mode)};
  put_u32(data, qpn);
  put_u32(data, psn);
  data.insert(data.end(), share.begin(), share.end());
  return to_hex(hmac(key_, data));
}

KeyOffer KeyExchange::offer(uint32_t qpn, uint32_t psn) const {
  KeyOffer o;
  o.mode = mode_;
  o.key_id = key_id_of(key_);
  o.share = own_share();
  o.proof = proof(mode_, qpn, psn, o.share);
  return o;
}

namespace {

// X25519(own, peer public key): 32 bytes, or empty if OpenSSL refuses the peer's key.
std::vector<uint8_t> x25519(EVP_PKEY* own, std::span<const uint8_t> peer_public) {
  EVP_PKEY* peer =
      EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, peer_public.data(), peer_public.size());
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new(own, nullptr);
  std::vector<uint8_t> shared(32);
  size_t length = shared.size();
  const bool ok = peer != nullptr && ctx != nullptr && EVP_PKEY_derive_init(ctx) == 1 &&
                  EVP_PKEY_derive_set_peer(ctx, peer) == 1 &&
                  EVP_PKEY_derive(ctx, shared.data(), &length) == 1 && length == shared.size();
  EVP_PKEY_CTX_free(ctx);
  EVP_PKEY_free(peer);
  if (!ok) shared.clear();
  return shared;
}

// One end's part of the transcript: its share, QPN and PSN.
void add_end(std::vector<uint8_t>& transcript, const std::string& share, uint32_t qpn,
             uint32_t psn) {
  transcript.insert(transcript.end(), share.begin(), share.end());
  put_u32(transcript, qpn);
  put_u32(transcript, psn);
}

}  // namespace

// The peer's offer must match in mode and key and carry a proof made with the key; then both
// ends order the offers by share (the smaller is end "a") and derive the same secrets.
Result<SecurityConfig, Error> KeyExchange::finish(uint32_t qpn, uint32_t psn, const KeyOffer& peer,
                                                  uint32_t peer_qpn, uint32_t peer_psn,
                                                  const std::string& peer_name) const {
  if (auto same = check_secure_modes(mode_, peer.mode, peer_name); !same.ok())
    return Err{same.error()};
  const std::string own_id = key_id_of(key_);
  if (peer.key_id != own_id)
    return fail(Errc::kPermission, "pre-shared keys differ: this end's key id is " + own_id +
                                       ", the peer's (" + peer_name + ") " + peer.key_id +
                                       ": give both ends the same key file");
  std::vector<uint8_t> share;
  if (!from_hex(peer.share, share) || share.size() != kShareBytes)
    return fail(Errc::kInvalidArgument, "the peer's (" + peer_name + ") key share is malformed");
  const std::string expected = proof(peer.mode, peer_qpn, peer_psn, peer.share);
  if (peer.proof.size() != expected.size() ||
      CRYPTO_memcmp(expected.data(), peer.proof.data(), expected.size()) != 0)
    return fail(Errc::kPermission, "the peer's (" + peer_name +
                                       ") offer does not prove the pre-shared key: it was made "
                                       "without the key, or altered on the way");
  std::vector<uint8_t> ikm = x25519(pair_->key, std::span(share).first(kPublicBytes));
  if (ikm.empty())
    return fail(Errc::kInvalidArgument, "the peer's (" + peer_name + ") public key is refused");
  ikm.insert(ikm.end(), key_.begin(), key_.end());
  const std::string own = own_share();
  const bool is_a = own < peer.share;
  std::vector<uint8_t> transcript{static_cast<uint8_t>(mode_)};
  if (is_a) {
    add_end(transcript, own, qpn, psn);
    add_end(transcript, peer.share, peer_qpn, peer_psn);
  } else {
    add_end(transcript, peer.share, peer_qpn, peer_psn);
    add_end(transcript, own, qpn, psn);
  }
  const TrafficSecrets secrets = derive_traffic_secrets(ikm, transcript);
  OPENSSL_cleanse(ikm.data(), ikm.size());
  SecurityConfig config;
  config.mode = mode_;
  config.send_secret = is_a ? secrets.a_to_b : secrets.b_to_a;
  config.receive_secret = is_a ? secrets.b_to_a : secrets.a_to_b;
  return config;
}

Result<Ok, Error> KeyExchange::finish_for(QueuePair& qp, uint32_t psn, const KeyOffer& peer,
                                          uint32_t peer_qpn, uint32_t peer_psn,
                                          const std::string& peer_name) const {
  auto keys = finish(qp.qpn().value, psn, peer, peer_qpn, peer_psn, peer_name);
  if (!keys.ok()) return Err{keys.error()};
  QpConfig config = qp.config();
  config.security = keys.value();
  if (!qp.set_config(config).ok())
    return fail(Errc::kInvalidArgument,
                "queue pair " + std::to_string(qp.qpn().value) + ": " + qp.config_error());
  return Ok{};
}

}  // namespace mrc::secure
