// Secure mode (core/packet_protection.h): transfers verify in both modes and across key epochs;
// forged, replayed, modified, truncated, plain and old-key packets are dropped before any state,
// counted by the endpoint, and answered with nothing. Also the pieces alone: AES-GCM against a
// published test vector, HKDF against RFC 5869, the replay window.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/aes_gcm.h"
#include "core/key_schedule.h"
#include "core/packet_protection.h"
#include "core/replay_window.h"
#include "pair.h"
#include "problem.h"
#include "util/hex.h"
#include "util/prng.h"

namespace mrc {
namespace {

using test::Pair;

constexpr size_t kKiB = 1024;

std::vector<uint8_t> hex(const std::string& text) {
  std::vector<uint8_t> out;
  EXPECT_TRUE(from_hex(text, out)) << text;
  return out;
}

QpConfig secure_config(SecureMode mode, uint64_t rekey_packets = uint64_t{1} << 24) {
  QpConfig c = test::small_config();
  c.security.mode = mode;
  c.security.send_secret.fill(0x11);
  c.security.receive_secret.fill(0x22);
  c.security.rekey_packets = rekey_packets;
  return c;
}

uint64_t security_drops(const Endpoint& e, SecurityDrop d) {
  return e.stats().security_drops[static_cast<size_t>(d)];
}

// The QP counters a packet could move; equal before and after means the QP saw nothing.
std::vector<uint64_t> qp_counters(const QueuePair* qp) {
  const QpStats s = qp->stats();
  std::vector<uint64_t> v{s.data_packets_sent, s.data_packets_received, s.data_bytes_placed,
                          s.sacks_sent,        s.sacks_received,        s.work_requests_completed,
                          s.access_naks_sent,  s.trims_received,        s.retransmits};
  v.insert(v.end(), s.drops.begin(), s.drops.end());
  v.insert(v.end(), s.nacks_sent.begin(), s.nacks_sent.end());
  return v;
}

TEST(Secure, AesGcmMatchesThePublishedTestVector) {
  // McGrew and Viega, "The Galois/Counter Mode of Operation", test case 4 (AES-128, 60-byte
  // plaintext, 20 bytes of associated data).
  PacketKeys keys;
  std::ranges::copy(hex("feffe9928665731c6d6a8f9467308308"), keys.key.begin());
  std::ranges::copy(hex("cafebabefacedbaddecaf888"), keys.iv.begin());
  std::vector<uint8_t> text = hex(
      "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449"
      "a6b525b16aedf5aa0de657ba637b39");
  const std::vector<uint8_t> aad = hex("feedfacedeadbeeffeedfacedeadbeefabaddad2");
  const std::vector<uint8_t> plain = text;
  std::array<uint8_t, 16> tag{};
  GcmKey sealer(keys, SecureMode::kEncrypt, /*sealing=*/true);
  sealer.seal(0, aad, text, tag);
  EXPECT_EQ(text, hex("42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b2546"
                      "6931c7d8f6a5aac84aa051ba30b396a0aac973d58e091"));
  EXPECT_EQ(std::vector<uint8_t>(tag.begin(), tag.end()), hex("5bc94fbc3221a5db94fae95ae7121a47"));
  GcmKey opener(keys, SecureMode::kEncrypt, /*sealing=*/false);
  std::vector<uint8_t> out(text.size());
  ASSERT_TRUE(opener.open(0, aad, text, tag, out));
  EXPECT_EQ(out, plain);
  tag[3] ^= 1;
  EXPECT_FALSE(opener.open(0, aad, text, tag, out));
}

// Both roads through GcmKey, EVP for every packet (a CPU without AES-NI or VAES) and the
// fastest the CPU has, seal alike and open each other's packets, in both modes, for payloads
// from empty to a jumbo frame's; a changed tag fails on either.
TEST(Secure, GcmKeyWithEvpAndWithoutItAgree) {
  Prng prng(5);
  for (const SecureMode mode : {SecureMode::kAuthenticate, SecureMode::kEncrypt}) {
    for (int trial = 0; trial < 60; ++trial) {
      PacketKeys keys;
      for (auto& b : keys.key) b = static_cast<uint8_t>(prng.next_u32());
      for (auto& b : keys.iv) b = static_cast<uint8_t>(prng.next_u32());
      std::vector<uint8_t> aad(40), plain(trial < 40 ? size_t{7} * trial : prng.below(9000));
      for (auto& b : aad) b = static_cast<uint8_t>(prng.next_u32());
      for (auto& b : plain) b = static_cast<uint8_t>(prng.next_u32());
      std::vector<uint8_t> by_evp = plain, by_fastest = plain;
      std::array<uint8_t, 16> evp_tag{}, fastest_tag{};
      const uint64_t nonce = prng.next_u64();
      GcmKey(keys, mode, true, /*evp_only=*/true).seal(nonce, aad, by_evp, evp_tag);
      GcmKey(keys, mode, true).seal(nonce, aad, by_fastest, fastest_tag);
      ASSERT_EQ(by_evp, by_fastest) << "trial " << trial;
      ASSERT_EQ(evp_tag, fastest_tag) << "trial " << trial;
      const bool decrypts = mode == SecureMode::kEncrypt;  // else `out` is left as it was
      std::vector<uint8_t> out(plain.size());
      EXPECT_TRUE(GcmKey(keys, mode, false, true).open(nonce, aad, by_fastest, fastest_tag, out));
      if (decrypts) {
        EXPECT_EQ(out, plain);
      }
      std::ranges::fill(out, 0);
      EXPECT_TRUE(GcmKey(keys, mode, false).open(nonce, aad, by_evp, evp_tag, out));
      if (decrypts) {
        EXPECT_EQ(out, plain);
      }
      evp_tag[trial % 16] ^= 1;
      EXPECT_FALSE(GcmKey(keys, mode, false, true).open(nonce, aad, by_evp, evp_tag, out));
      EXPECT_FALSE(GcmKey(keys, mode, false).open(nonce, aad, by_evp, evp_tag, out));
    }
  }
}

// The GMAC of authenticate-only packets (core/aes_gcm.h: an AES-NI block under OpenSSL's GCM mode)
// gives GCM's tags: McGrew and Viega's test case 1 (all zero, nothing to hash), then against
// OpenSSL's EVP AES-GCM with everything as associated data, for random keys, nonces and
// lengths split anywhere; a changed bit anywhere fails verification.
TEST(Secure, GmacMatchesAesGcmWithoutPlaintext) {
  if (!AesGcm::available()) GTEST_SKIP() << "no AES-NI: GcmKey uses EVP for every packet";
  const std::array<uint8_t, 16> zero_key{};
  const std::array<uint8_t, 12> zero_nonce{};
  std::array<uint8_t, 16> tag{};
  AesGcm(zero_key).tag(zero_nonce, {}, {}, tag);
  EXPECT_EQ(std::vector<uint8_t>(tag.begin(), tag.end()), hex("58e2fccefa7e3061367f1d57a4e7455a"));
  Prng prng(7);
  EVP_CIPHER_CTX* evp = EVP_CIPHER_CTX_new();
  for (int trial = 0; trial < 300; ++trial) {
    std::array<uint8_t, 16> key{};
    std::array<uint8_t, 12> nonce{};
    for (auto& b : key) b = static_cast<uint8_t>(prng.next_u32());
    for (auto& b : nonce) b = static_cast<uint8_t>(prng.next_u32());
    std::vector<uint8_t> data(prng.below(9100));
    for (auto& b : data) b = static_cast<uint8_t>(prng.next_u32());
    const size_t split = data.empty() ? 0 : prng.below(data.size() + 1);
    std::array<uint8_t, 16> expected{}, unused{};
    int n = 0;
    ASSERT_EQ(EVP_EncryptInit_ex(evp, EVP_aes_128_gcm(), nullptr, key.data(), nonce.data()), 1);
    ASSERT_EQ(EVP_EncryptUpdate(evp, nullptr, &n, data.data(), static_cast<int>(data.size())), 1);
    ASSERT_EQ(EVP_EncryptFinal_ex(evp, unused.data(), &n), 1);
    ASSERT_EQ(EVP_CIPHER_CTX_ctrl(evp, EVP_CTRL_GCM_GET_TAG, 16, expected.data()), 1);
    AesGcm gmac(key);
    const std::span<const uint8_t> all(data);
    gmac.tag(nonce, all.first(split), all.subspan(split), tag);
    ASSERT_EQ(tag, expected) << "trial " << trial << ", " << data.size() << " bytes";
    EXPECT_TRUE(gmac.verify(nonce, all.first(split), all.subspan(split), expected));
    if (!data.empty())
      data[prng.below(data.size())] ^= 0x10;
    else
      nonce[0] ^= 1;
    EXPECT_FALSE(gmac.verify(nonce, all.first(split), all.subspan(split), expected));
  }
  EVP_CIPHER_CTX_free(evp);
}

// Encrypted packets (core/aes_gcm.h: VAES counter mode under OpenSSL's GCM mode) get EVP's
// AES-128-GCM ciphertexts and tags: McGrew and Viega's test case 2 (one zero block), then random
// keys, nonces, associated data and payloads of every length up to a jumbo frame's (across the
// sixteen-block loop, the four-block tail and partial blocks); opening gives the plaintext back,
// and a changed bit of ciphertext, associated data or tag fails it.
TEST(Secure, AesGcmEncryptionMatchesEvp) {
  if (!AesGcm::encrypts()) GTEST_SKIP() << "no VAES/AVX-512: encrypted packets use EVP";
  const std::array<uint8_t, 16> zero_key{};
  const std::array<uint8_t, 12> zero_nonce{};
  std::vector<uint8_t> block(16, 0);
  std::array<uint8_t, 16> tag{};
  AesGcm(zero_key).seal(zero_nonce, {}, block, tag);
  EXPECT_EQ(block, hex("0388dace60b6a392f328c2b971b2fe78"));
  EXPECT_EQ(std::vector<uint8_t>(tag.begin(), tag.end()), hex("ab6e47d42cec13bdf53a67b21257bddf"));
  Prng prng(11);
  EVP_CIPHER_CTX* evp = EVP_CIPHER_CTX_new();
  for (int trial = 0; trial < 400; ++trial) {
    std::array<uint8_t, 16> key{};
    std::array<uint8_t, 12> nonce{};
    for (auto& b : key) b = static_cast<uint8_t>(prng.next_u32());
    for (auto& b : nonce) b = static_cast<uint8_t>(prng.next_u32());
    std::vector<uint8_t> aad(prng.below(80)), plain(trial < 300 ? trial : prng.below(9100));
    for (auto& b : aad) b = static_cast<uint8_t>(prng.next_u32());
    for (auto& b : plain) b = static_cast<uint8_t>(prng.next_u32());
    std::vector<uint8_t> expected(plain.size() + 16);
    std::array<uint8_t, 16> expected_tag{};
    int n = 0;
    ASSERT_EQ(EVP_EncryptInit_ex(evp, EVP_aes_128_gcm(), nullptr, key.data(), nonce.data()), 1);
    ASSERT_EQ(EVP_EncryptUpdate(evp, nullptr, &n, aad.data(), static_cast<int>(aad.size())), 1);
    ASSERT_EQ(
        EVP_EncryptUpdate(evp, expected.data(), &n, plain.data(), static_cast<int>(plain.size())),
        1);
    ASSERT_EQ(EVP_EncryptFinal_ex(evp, expected.data() + n, &n), 1);
    ASSERT_EQ(EVP_CIPHER_CTX_ctrl(evp, EVP_CTRL_GCM_GET_TAG, 16, expected_tag.data()), 1);
    expected.resize(plain.size());
    AesGcm gcm(key);
    std::vector<uint8_t> text = plain;
    gcm.seal(nonce, aad, text, tag);
    ASSERT_EQ(text, expected) << "trial " << trial << ", " << plain.size() << " bytes";
    ASSERT_EQ(tag, expected_tag) << "trial " << trial << ", " << plain.size() << " bytes";
    std::vector<uint8_t> opened(text.size(), 0xee);
    ASSERT_TRUE(gcm.open(nonce, aad, text, tag, opened));
    EXPECT_EQ(opened, plain);
    std::vector<uint8_t>& changed = text.empty() ? aad : text;
    if (!changed.empty()) changed[prng.below(changed.size())] ^= 0x04;
    if (changed.empty()) tag[prng.below(16)] ^= 0x40;
    EXPECT_FALSE(gcm.open(nonce, aad, text, tag, opened)) << "trial " << trial;
  }
  EVP_CIPHER_CTX_free(evp);
}

TEST(Secure, HkdfExtractMatchesRfc5869) {
  // RFC 5869 A.1: IKM 22 x 0x0b, salt 000102...0c.
  const std::vector<uint8_t> ikm(22, 0x0b);
  const std::vector<uint8_t> salt = hex("000102030405060708090a0b0c");
  const TrafficSecret prk = hkdf_extract(salt, ikm);
  EXPECT_EQ(std::vector<uint8_t>(prk.begin(), prk.end()),
            hex("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"));
  const TrafficSecret next = next_epoch_secret(prk);
  EXPECT_NE(next, prk);
  EXPECT_NE(packet_keys(next).key, packet_keys(prk).key);
  const TrafficSecrets s = derive_traffic_secrets(ikm, salt);
  EXPECT_NE(s.a_to_b, s.b_to_a);
  EXPECT_EQ(derive_traffic_secrets(ikm, salt).a_to_b, s.a_to_b);
  EXPECT_NE(derive_traffic_secrets(ikm, ikm).a_to_b, s.a_to_b);
}

TEST(Secure, ReplayWindowRefusesRepeatsAndWhatFellOut) {
  ReplayWindow w;
  EXPECT_TRUE(w.fresh(5));
  w.accept(5);
  EXPECT_FALSE(w.fresh(5));
  EXPECT_TRUE(w.fresh(3));  // reordered, inside the window
  w.accept(3);
  EXPECT_FALSE(w.fresh(3));
  w.accept(5 + ReplayWindow::kPackets);
  EXPECT_FALSE(w.fresh(4));  // fell out of the window
  EXPECT_TRUE(w.fresh(6 + 1));
  EXPECT_FALSE(w.fresh(5 + ReplayWindow::kPackets));
  w.accept(100000);
  EXPECT_TRUE(w.fresh(100000 - 1));
  EXPECT_FALSE(w.fresh(100000 - ReplayWindow::kPackets));
}

// Runs a write of `bytes` from A to B (and from B to A if `both_ways`), and returns what A put
// on the wire.
std::vector<std::vector<uint8_t>> exchange(Pair& pair, uint64_t bytes, uint64_t wr_id,
                                           bool both_ways = true) {
  std::vector<std::vector<uint8_t>> from_a;
  pair.filter = [&](int from, std::vector<uint8_t>& b, RxMeta&, const TxMeta&) {
    if (from == 0) from_a.push_back(b);
    return true;
  };
  EXPECT_TRUE(pair.write(0, 0, bytes, wr_id).ok());
  if (both_ways) {
    EXPECT_TRUE(pair.write(1, 0, bytes, wr_id + 1).ok());
  }
  pair.run(pair.now() + Duration{50'000'000});
  pair.filter = nullptr;
  for (int side = 0; side < (both_ways ? 2 : 1); ++side) {
    const auto done = pair.drain(side, false);
    EXPECT_EQ(done.size(), 1u);
    if (!done.empty()) {
      EXPECT_EQ(done[0].status, WcStatus::kSuccess);
    }
    EXPECT_TRUE(std::equal(pair.side[1 - side].target.begin(),
                           pair.side[1 - side].target.begin() + static_cast<ptrdiff_t>(bytes),
                           pair.side[side].source.begin()));
  }
  return from_a;
}

bool holds_source(const std::vector<uint8_t>& datagram, const std::vector<uint8_t>& source) {
  constexpr size_t kProbe = 64;
  return std::search(datagram.begin(), datagram.end(), source.begin() + 4096,
                     source.begin() + 4096 + kProbe) != datagram.end();
}

TEST(Secure, TransfersVerifyAndTheWireShowsTheMode) {
  for (const SecureMode mode : {SecureMode::kAuthenticate, SecureMode::kEncrypt}) {
    SCOPED_TRACE(to_string(mode));
    Pair pair(2, secure_config(mode), 256 * kKiB);
    const auto wire = exchange(pair, 256 * kKiB, 1);
    size_t secure = 0;
    size_t clear = 0;
    for (const auto& d : wire) {
      secure += wire::is_secure(d) ? 1 : 0;
      clear += holds_source(d, pair.side[0].source) ? 1 : 0;
    }
    EXPECT_EQ(secure, wire.size());
    if (mode == SecureMode::kEncrypt) {
      EXPECT_EQ(clear, 0u);
    } else {
      EXPECT_GT(clear, 0u);
    }
    for (int side = 0; side < 2; ++side)
      for (size_t d = 0; d < static_cast<size_t>(SecurityDrop::kCount); ++d)
        EXPECT_EQ(pair.side[side].endpoint->stats().security_drops[d], 0u) << d;
  }
}

TEST(Secure, KeyEpochsAdvanceAndOldKeysStopOpening) {
  Pair pair(2, secure_config(SecureMode::kEncrypt, 16), 512 * kKiB);
  const auto wire = exchange(pair, 512 * kKiB, 1);
  const PacketProtection* a = pair.side[0].qp->protection();
  const PacketProtection* b = pair.side[1].qp->protection();
  ASSERT_NE(a, nullptr);
  EXPECT_GE(a->send_epoch(), 4);
  EXPECT_EQ(b->receive_epoch(), a->send_epoch());
  exchange(pair, 512 * kKiB, 3);  // still verifies after many epochs
}

// A plain WRITE_ONLY datagram of 64 payload bytes, laid out kSechBytes into a buffer for seal().
std::vector<uint8_t> plain_for_seal(size_t& plain_length) {
  std::vector<uint8_t> out(256);
  wire::DataHeader h;
  h.bth.opcode = wire::Opcode::kWriteOnly;
  const size_t header = wire::write_data_header(h, std::span(out).subspan(wire::kSechBytes));
  plain_length = header + 64 + wire::kIcrcBytes;
  return out;
}

TEST(Secure, AReceiverFollowsASenderWhoseWholeEpochsWereLost) {
  SecurityConfig a = secure_config(SecureMode::kEncrypt, 1).security;  // an epoch per packet
  SecurityConfig b = a;
  std::swap(b.send_secret, b.receive_secret);
  PacketProtection sender(a);
  PacketProtection receiver(b);
  std::vector<std::vector<uint8_t>> sent;
  for (int i = 0; i < 40; ++i) {  // epochs 0..39
    size_t length = 0;
    std::vector<uint8_t> d = plain_for_seal(length);
    d.resize(sender.seal(d, length));
    sent.push_back(d);
  }
  std::vector<uint8_t> plain(512);
  const auto opens = [&](int epoch) { return receiver.open(sent[epoch], plain); };
  ASSERT_TRUE(opens(0).ok());
  ASSERT_TRUE(opens(5).ok());  // epochs 1-4 lost whole
  EXPECT_EQ(receiver.receive_epoch(), 5);
  EXPECT_TRUE(opens(4).ok());  // the previous epoch, reordered
  EXPECT_EQ(opens(3).error(), SecurityDrop::kOldKey);
  EXPECT_EQ(opens(5).error(), SecurityDrop::kReplay);
  EXPECT_EQ(opens(5 + PacketProtection::kEpochsAhead + 1).error(), SecurityDrop::kOldKey);
  ASSERT_TRUE(opens(5 + PacketProtection::kEpochsAhead).ok());  // as far as a receiver follows
  ASSERT_TRUE(opens(6 + PacketProtection::kEpochsAhead).ok());
  EXPECT_EQ(receiver.receive_epoch(), 6 + PacketProtection::kEpochsAhead);
}

class SecureHostile : public ::testing::Test {
 protected:
  // Key epochs of 8 packets: A's first packets are several epochs old by the end.
  SecureHostile() : pair_(2, secure_config(SecureMode::kEncrypt, 8), 1 << 20) {}
  void SetUp() override { wire_ = exchange(pair_, 256 * kKiB, 1, /*both_ways=*/false); }

  Endpoint& victim() { return *pair_.side[1].endpoint; }
  void inject(const std::vector<uint8_t>& bytes) {
    RxMeta meta;
    meta.peer = 0;
    victim().handle_datagram(pair_.now(), bytes, meta);
  }
  // The last data packet A sent, moved to the receiver's current key epoch and a packet counter
  // `ahead` x 2^40 further on (fresh, but the tag no longer matches: the SECH is
  // authenticated), and the ICRC made good again.
  std::vector<uint8_t> fresh_counter(int ahead) {
    std::vector<uint8_t> d = last_data();
    const uint16_t epoch = pair_.side[1].qp->protection()->receive_epoch();
    d[wire::kBthBytes] = static_cast<uint8_t>(epoch >> 8);
    d[wire::kBthBytes + 1] = static_cast<uint8_t>(epoch);
    d[wire::kBthBytes + 2] = static_cast<uint8_t>(d[wire::kBthBytes + 2] + ahead);
    reseal(d);
    return d;
  }
  std::vector<uint8_t> last_data() {
    for (auto it = wire_.rbegin(); it != wire_.rend(); ++it)
      if (wire::is_data(static_cast<wire::Opcode>((*it)[0]))) return *it;
    ADD_FAILURE() << "no data packet captured";
    return {};
  }
  static void reseal(std::vector<uint8_t>& d) { wire::seal(d, d.size() - wire::kIcrcBytes); }

  // Nothing of the victim changed and it has nothing to say.
  void expect_untouched(const std::vector<uint64_t>& before,
                        const std::vector<uint8_t>& target_before) {
    EXPECT_EQ(qp_counters(pair_.side[1].qp), before);
    EXPECT_EQ(pair_.side[1].target, target_before);
    EXPECT_FALSE(victim().wants_to_send(pair_.now()));
    EXPECT_TRUE(pair_.drain(1, true).empty());
    EXPECT_TRUE(pair_.drain(1, false).empty());
  }

  Pair pair_;
  std::vector<std::vector<uint8_t>> wire_;
};

TEST_F(SecureHostile, NothingButTheRealPeerTouchesTheQp) {
  const auto before = qp_counters(pair_.side[1].qp);
  const auto target_before = pair_.side[1].target;
  for (const auto& d : wire_) inject(d);  // replayed: old epochs and seen counters
  EXPECT_GT(security_drops(victim(), SecurityDrop::kReplay), 0u);
  EXPECT_GT(security_drops(victim(), SecurityDrop::kOldKey), 0u);
  inject(fresh_counter(1));  // modified security header
  auto flipped = fresh_counter(0);
  flipped[flipped.size() - wire::kIcrcBytes - wire::kTagBytes - 100] ^= 0x40;  // payload
  flipped[wire::kBthBytes + 2] = static_cast<uint8_t>(flipped[wire::kBthBytes + 2] + 2);
  reseal(flipped);
  inject(flipped);
  auto forged = fresh_counter(3);
  std::fill(forged.end() - wire::kIcrcBytes - wire::kTagBytes, forged.end(), 0x5A);  // made up
  reseal(forged);
  inject(forged);
  EXPECT_EQ(security_drops(victim(), SecurityDrop::kBadTag), 3u);
  auto cut = fresh_counter(4);
  cut.resize(wire::kBthBytes + 20);
  reseal(cut);
  inject(cut);
  EXPECT_EQ(security_drops(victim(), SecurityDrop::kTruncated), 1u);
  const auto data = last_data();  // the same bytes without S and SECH: a plain packet
  std::vector<uint8_t> plain(data.begin(), data.begin() + wire::kBthBytes);
  plain[8] &= static_cast<uint8_t>(~wire::kBthSecureFlag);
  plain.insert(plain.end(), data.begin() + wire::kBthBytes + wire::kSechBytes, data.end());
  reseal(plain);
  inject(plain);
  EXPECT_EQ(security_drops(victim(), SecurityDrop::kPlainToSecure), 1u);
  expect_untouched(before, target_before);
  exchange(pair_, 256 * kKiB, 10);  // and the real peer still gets through
}

TEST_F(SecureHostile, ATrimmedSecurePacketIsNotTrusted) {
  const auto before = qp_counters(pair_.side[1].qp);
  const auto target_before = pair_.side[1].target;
  RxMeta meta;
  meta.trimmed = true;
  const auto d = fresh_counter(1);
  victim().handle_datagram(pair_.now(), std::span(d).first(64), meta);
  EXPECT_EQ(security_drops(victim(), SecurityDrop::kTrimmed), 1u);
  expect_untouched(before, target_before);
}

TEST(Secure, MismatchedKeysPlaceNothingAndTheSenderFails) {
  Pair pair(1, secure_config(SecureMode::kAuthenticate), 64 * kKiB);
  QpConfig wrong = secure_config(SecureMode::kAuthenticate);
  wrong.security.send_secret.fill(0x33);  // B expects A under 0x22 (pair.h swaps)
  // Rebuild A's protection with the wrong send secret: a QP takes its keys at RTR.
  QueuePair* a = pair.side[0].qp;
  a->to_reset();
  ASSERT_TRUE(a->set_config(wrong).ok());
  ASSERT_TRUE(a->to_init().ok());
  ASSERT_TRUE(a->to_rtr(RtrAttributes{pair.side[1].qp->qpn(), Psn(77), 1}).ok());
  ASSERT_TRUE(a->to_rts(RtsAttributes{Psn(77)}).ok());
  ASSERT_TRUE(pair.write(0, 0, 8192, 1).ok());
  pair.run(pair.now() + Duration{5'000'000'000});
  const auto done = pair.drain(0, false);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kRetryExceeded);
  EXPECT_GT(security_drops(*pair.side[1].endpoint, SecurityDrop::kBadTag), 0u);
  EXPECT_EQ(pair.side[1].qp->stats().data_packets_received, 0u);
}

TEST(Secure, ASecurePacketForAPlainQpIsDropped) {
  Pair secure(1, secure_config(SecureMode::kEncrypt), 64 * kKiB);
  const auto wire = exchange(secure, 8192, 1);
  Pair plain(1, test::small_config(), 64 * kKiB);
  const auto before = qp_counters(plain.side[1].qp);
  RxMeta meta;
  for (auto d : wire) {
    // Address the plain pair's B, and make the ICRC good again.
    const uint32_t qpn = plain.side[1].qp->qpn().value;
    d[5] = static_cast<uint8_t>(qpn >> 16);
    d[6] = static_cast<uint8_t>(qpn >> 8);
    d[7] = static_cast<uint8_t>(qpn);
    wire::seal(d, d.size() - wire::kIcrcBytes);
    plain.side[1].endpoint->handle_datagram(plain.now(), d, meta);
  }
  EXPECT_EQ(security_drops(*plain.side[1].endpoint, SecurityDrop::kSecureToPlain), wire.size());
  EXPECT_EQ(qp_counters(plain.side[1].qp), before);
}

// A keys_later QP (keys agreed over its own path after RTR, secure/inband_keys.h) sends nothing
// and opens nothing until set_keys; then the transfer runs as any secure one's.
TEST(Secure, AQpWhoseKeysComeLaterWaitsForThem) {
  QpConfig later = test::small_config();
  later.security.mode = SecureMode::kEncrypt;
  later.security.keys_later = true;
  ASSERT_EQ(problem(later.validate(1)), "");
  Pair pair(1, later, 64 * kKiB);
  ASSERT_TRUE(pair.write(0, 0, 8192, 1).ok());
  pair.run(pair.now() + Duration{2'000'000'000});
  EXPECT_EQ(pair.side[0].endpoint->stats().datagrams_sent, 0u);
  EXPECT_TRUE(pair.drain(0, false).empty());  // waiting, not failed
  // Secure and plain packets for it are refused, and it still sends nothing.
  Pair other(1, secure_config(SecureMode::kEncrypt), 64 * kKiB);
  auto wire = exchange(other, 8192, 1, /*both_ways=*/false);
  ASSERT_FALSE(wire.empty());
  const uint32_t qpn = pair.side[1].qp->qpn().value;
  for (auto& d : wire) {
    d[5] = static_cast<uint8_t>(qpn >> 16);
    d[6] = static_cast<uint8_t>(qpn >> 8);
    d[7] = static_cast<uint8_t>(qpn);
    wire::seal(d, d.size() - wire::kIcrcBytes);
    pair.side[1].endpoint->handle_datagram(pair.now(), d, RxMeta{});
  }
  EXPECT_EQ(security_drops(*pair.side[1].endpoint, SecurityDrop::kNoKey), wire.size());
  EXPECT_FALSE(pair.side[1].endpoint->wants_to_send(pair.now()));
  std::array<uint8_t, kTrafficSecretBytes> x{}, y{};
  x.fill(0x5a);
  y.fill(0xa5);
  ASSERT_TRUE(pair.side[0].qp->set_keys(x, y).ok());
  ASSERT_TRUE(pair.side[1].qp->set_keys(y, x).ok());
  EXPECT_FALSE(pair.side[1].qp->set_keys(y, x).ok());  // once
  pair.run(pair.now() + Duration{50'000'000});
  const auto done = pair.drain(0, false);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_TRUE(std::equal(pair.side[1].target.begin(), pair.side[1].target.begin() + 8192,
                         pair.side[0].source.begin()));
}

// A QP's configured secrets serve one connection: RTR takes them and the QP keeps no copy, so
// a QP reset and connected again cannot send under the same key from counter 0 (a repeated
// GCM nonce); it waits for new keys instead.
TEST(Secure, AReconnectedQpDoesNotReuseItsKeys) {
  Pair pair(1, secure_config(SecureMode::kEncrypt), 64 * kKiB);
  (void)exchange(pair, 8192, 1, /*both_ways=*/false);
  QueuePair* a = pair.side[0].qp;
  const auto zero = std::array<uint8_t, kTrafficSecretBytes>{};
  EXPECT_EQ(a->config().security.send_secret, zero);
  EXPECT_EQ(a->config().security.receive_secret, zero);
  a->to_reset();
  ASSERT_TRUE(a->to_init().ok());
  ASSERT_TRUE(a->to_rtr(RtrAttributes{pair.side[1].qp->qpn(), Psn(77), 1}).ok());
  ASSERT_TRUE(a->to_rts(RtsAttributes{Psn(77)}).ok());
  const uint64_t sent = pair.side[0].endpoint->stats().datagrams_sent;
  ASSERT_TRUE(pair.write(0, 0, 8192, 2).ok());
  pair.run(pair.now() + Duration{50'000'000});
  EXPECT_EQ(pair.side[0].endpoint->stats().datagrams_sent, sent);
  // New secrets (as a new connection's set-up gives) make it usable again.
  a->to_reset();
  ASSERT_TRUE(a->set_config(secure_config(SecureMode::kEncrypt)).ok());
  ASSERT_TRUE(a->to_init().ok());
  ASSERT_TRUE(a->to_rtr(RtrAttributes{pair.side[1].qp->qpn(), Psn(99), 1}).ok());
  EXPECT_NE(a->protection(), nullptr);
}

TEST(Secure, ConfigurationErrorsNameTheField) {
  QpConfig c = secure_config(SecureMode::kEncrypt);
  c.set_mtu(9000);
  EXPECT_NE(problem(c.validate(1)).find("mtu_bytes (secure mode)"), std::string::npos)
      << problem(c.validate(1));
  c = secure_config(SecureMode::kEncrypt);
  c.security.receive_secret.fill(0);
  EXPECT_NE(problem(c.validate(1)).find("traffic secrets"), std::string::npos);
  c = secure_config(SecureMode::kAuthenticate);
  c.security.rekey_packets = 0;
  EXPECT_NE(problem(c.validate(1)).find("security.rekey_packets"), std::string::npos);
  EXPECT_EQ(problem(secure_config(SecureMode::kEncrypt).validate(1)), "");
  ASSERT_TRUE(parse_secure_mode("encrypt").ok());
  EXPECT_EQ(parse_secure_mode("encrypt").value(), SecureMode::kEncrypt);
  EXPECT_FALSE(parse_secure_mode("aes").ok());
}

}  // namespace
}  // namespace mrc
