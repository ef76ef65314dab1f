// HKDF-SHA256 and the labels of mrc's key schedule (see key_schedule.h).
#include "core/key_schedule.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <vector>

#include "mrc/assert.hpp"

namespace mrc {
namespace {

constexpr size_t kHashBytes = 32;
constexpr std::string_view kLabelPrefix = "mrc ";

void hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> data, uint8_t* out) {
  unsigned int length = 0;
  const uint8_t* done = HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data.data(),
                             data.size(), out, &length);
  MRC_ASSERT(done != nullptr && length == kHashBytes);
}

// RFC 8446 §7.1's HkdfLabel: length (2 bytes), label with its prefix (1-byte length), context
// (1-byte length).
std::vector<uint8_t> hkdf_label(size_t length, std::string_view label,
                                std::span<const uint8_t> context) {
  std::vector<uint8_t> info;
  info.reserve(4 + kLabelPrefix.size() + label.size() + context.size());
  info.push_back(static_cast<uint8_t>(length >> 8));
  info.push_back(static_cast<uint8_t>(length));
  info.push_back(static_cast<uint8_t>(kLabelPrefix.size() + label.size()));
  for (const char c : kLabelPrefix) info.push_back(static_cast<uint8_t>(c));
  for (const char c : label) info.push_back(static_cast<uint8_t>(c));
  info.push_back(static_cast<uint8_t>(context.size()));
  for (const uint8_t b : context) info.push_back(b);
  return info;
}

}  // namespace

TrafficSecret hkdf_extract(std::span<const uint8_t> salt, std::span<const uint8_t> ikm) {
  static constexpr std::array<uint8_t, kHashBytes> kZeroSalt{};
  TrafficSecret prk;
  hmac_sha256(salt.empty() ? std::span<const uint8_t>(kZeroSalt) : salt, ikm, prk.data());
  return prk;
}

// T(i) = HMAC(secret, T(i-1) | info | i), out = T(1) | T(2) | ...
void hkdf_expand_label(const TrafficSecret& secret, std::string_view label,
                       std::span<const uint8_t> context, std::span<uint8_t> out) {
  MRC_ASSERT(out.size() <= 255 * kHashBytes && context.size() <= 255);
  const std::vector<uint8_t> info = hkdf_label(out.size(), label, context);
  std::array<uint8_t, kHashBytes> block{};
  std::vector<uint8_t> input;
  size_t done = 0;
  for (uint8_t i = 1; done < out.size(); ++i) {
    input.clear();
    if (i > 1) input.assign(block.begin(), block.end());
    for (const uint8_t b : info) input.push_back(b);
    input.push_back(i);
    hmac_sha256(secret, input, block.data());
    const size_t take = std::min(kHashBytes, out.size() - done);
    std::copy_n(block.begin(), take, out.begin() + static_cast<ptrdiff_t>(done));
    done += take;
  }
}

PacketKeys packet_keys(const TrafficSecret& epoch_secret) {
  PacketKeys keys;
  hkdf_expand_label(epoch_secret, "key", {}, keys.key);
  hkdf_expand_label(epoch_secret, "iv", {}, keys.iv);
  return keys;
}

TrafficSecret next_epoch_secret(const TrafficSecret& epoch_secret) {
  TrafficSecret next;
  hkdf_expand_label(epoch_secret, "ku", {}, next);
  return next;
}

TrafficSecrets derive_traffic_secrets(std::span<const uint8_t> shared,
                                      std::span<const uint8_t> transcript) {
  std::array<uint8_t, kHashBytes> digest{};
  unsigned int length = 0;
  EVP_Digest(transcript.data(), transcript.size(), digest.data(), &length, EVP_sha256(), nullptr);
  MRC_ASSERT(length == kHashBytes);
  const TrafficSecret master = hkdf_extract({}, shared);
  TrafficSecrets secrets;
  hkdf_expand_label(master, "a to b", digest, secrets.a_to_b);
  hkdf_expand_label(master, "b to a", digest, secrets.b_to_a);
  return secrets;
}

void wipe(TrafficSecret& secret) {
  OPENSSL_cleanse(secret.data(), secret.size());
}

}  // namespace mrc
