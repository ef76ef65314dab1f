// In-band key agreement (secure/inband_keys.h): two ends agree on matching keys however offers are
// lost or late, the exchange ends, refused offers change nothing, and a failed agreement says
// why and names the peer. The ends exchange datagrams in memory, on a clock of the test's own.
#include "secure/inband_keys.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/wire/packet.h"
#include "util/prng.h"

namespace mrc::secure {
namespace {

constexpr uint32_t kQpnA = 0x10001, kQpnB = 0x20002;

std::vector<uint8_t> key_of(uint8_t fill) {
  return std::vector<uint8_t>(32, fill);
}

struct Ends {
  InbandKeys end[2];
  std::optional<InbandKeys::Outcome> outcome[2];
  Instant now{1'000'000};
  double loss = 0;
  Prng prng{1};
  uint64_t delivered = 0;

  void start(int i, std::vector<uint8_t> key, SecureMode mode = SecureMode::kEncrypt) {
    const uint32_t own = i == 0 ? kQpnA : kQpnB, other = i == 0 ? kQpnB : kQpnA;
    ASSERT_TRUE(end[i].start(now, mode, key, own, 7, other, i == 0 ? "end B" : "end A").ok());
  }
  // Moves offers between the ends (dropping `loss` of them) and runs timers, until `until`.
  void run(Instant until) {
    while (now < until) {
      for (int i = 0; i < 2; ++i) {
        for (auto& o : end[i].take_outgoing()) {
          EXPECT_EQ(o.peer, 7u);
          if (static_cast<double>(prng.below(1000)) < loss * 1000) continue;
          ++delivered;
          end[1 - i].on_datagram(now, o.datagram);
        }
        for (auto& o : end[i].take_outcomes()) {
          EXPECT_FALSE(outcome[i].has_value()) << "one outcome per agreement";
          outcome[i] = o;
        }
      }
      now = now + Duration::from_ms(1);
      for (auto& e : end) e.on_timer(now);
    }
  }
  bool quiet() const {
    return end[0].next_deadline().is_never() && end[1].next_deadline().is_never() &&
           !end[0].active() && !end[1].active();
  }
};

void expect_matching(const Ends& e) {
  ASSERT_TRUE(e.outcome[0] && e.outcome[1]);
  ASSERT_TRUE(e.outcome[0]->agreed) << e.outcome[0]->error;
  ASSERT_TRUE(e.outcome[1]->agreed) << e.outcome[1]->error;
  EXPECT_EQ(e.outcome[0]->keys.send_secret, e.outcome[1]->keys.receive_secret);
  EXPECT_EQ(e.outcome[0]->keys.receive_secret, e.outcome[1]->keys.send_secret);
  EXPECT_NE(e.outcome[0]->keys.send_secret, e.outcome[0]->keys.receive_secret);
  EXPECT_TRUE(e.outcome[0]->keys.keys_later);
  EXPECT_EQ(e.outcome[0]->qpn, kQpnA);
}

TEST(InbandKeys, OffersRoundTripAndMalformedOnesAreRefused) {
  KeyOfferPacket p{kQpnB, kQpnA, true, false, {}};
  p.offer = {SecureMode::kAuthenticate, std::string(16, 'a'), std::string(96, '5'),
             std::string(64, 'c')};
  const auto bytes = encode_key_offer(p);
  ASSERT_EQ(bytes.size(), kKeyOfferBytes);
  const auto back = decode_key_offer(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->dest_qpn, kQpnB);
  EXPECT_EQ(back->source_qpn, kQpnA);
  EXPECT_TRUE(back->holds_yours);
  EXPECT_FALSE(back->reply);
  EXPECT_EQ(back->offer.share, p.offer.share);
  EXPECT_EQ(back->offer.proof, p.offer.proof);
  EXPECT_FALSE(decode_key_offer(std::span(bytes).first(bytes.size() - 1)));
  auto flipped = bytes;
  flipped[40] ^= 1;  // the ICRC no longer matches
  EXPECT_FALSE(decode_key_offer(flipped));
  EXPECT_FALSE(decode_key_offer({}));
}

TEST(InbandKeys, BothEndsAgreeAndTheExchangeEnds) {
  Ends e;
  e.start(0, key_of(9));
  e.start(1, key_of(9));
  e.run(e.now + Duration::from_ms(200));
  expect_matching(e);
  EXPECT_TRUE(e.quiet());
  EXPECT_LE(e.delivered, 6u);
}

TEST(InbandKeys, APeerThatConnectsLateStillAgrees) {
  Ends e;
  e.start(0, key_of(9));
  e.run(e.now + Duration::from_ms(3000));  // A's offers find no agreement at B
  EXPECT_GT(e.end[1].counters().offers_refused, 0u);
  e.start(1, key_of(9));
  e.run(e.now + Duration::from_ms(500));
  expect_matching(e);
  EXPECT_TRUE(e.quiet());
}

TEST(InbandKeys, LossyPathsStillAgreeAndEnd) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Ends e;
    e.prng = Prng(seed);
    e.loss = 0.5;
    e.start(0, key_of(3), SecureMode::kAuthenticate);
    e.run(e.now + Duration::from_ms(static_cast<int64_t>(seed * 7)));
    e.start(1, key_of(3), SecureMode::kAuthenticate);
    e.run(e.now + Duration::from_ms(5000));
    expect_matching(e);
    EXPECT_TRUE(e.quiet());
  }
}

TEST(InbandKeys, MismatchedKeysFailBothEndsNamingThePeerAndTheKeys) {
  Ends e;
  e.start(0, key_of(1));
  e.start(1, key_of(2));
  e.run(e.now + InbandKeys::kDefaultTimeout + Duration::from_ms(100));
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(e.outcome[i]);
    EXPECT_FALSE(e.outcome[i]->agreed);
    EXPECT_NE(e.outcome[i]->error.find("pre-shared keys differ"), std::string::npos)
        << e.outcome[i]->error;
    EXPECT_NE(e.outcome[i]->error.find(i == 0 ? "end B" : "end A"), std::string::npos);
  }
  EXPECT_TRUE(e.quiet());
}

TEST(InbandKeys, APeerThatNeverAnswersIsAnErrorInSeconds) {
  Ends e;
  e.start(0, key_of(1), SecureMode::kAuthenticate);
  e.run(e.now + InbandKeys::kDefaultTimeout + Duration::from_ms(100));
  ASSERT_TRUE(e.outcome[0]);
  EXPECT_FALSE(e.outcome[0]->agreed);
  EXPECT_NE(e.outcome[0]->error.find("no key offer from end B (queue pair 131074)"),
            std::string::npos)
      << e.outcome[0]->error;
  EXPECT_NE(e.outcome[0]->error.find("secure mode auth"), std::string::npos);
}

// An altered offer, an offer from another QP and a replayed flood: none gives keys, and
// replies stay at one per kMinReplyInterval.
TEST(InbandKeys, RefusedAndReplayedOffersChangeNothing) {
  Ends e;
  e.start(0, key_of(4));
  const auto offer = e.end[0].take_outgoing().at(0).datagram;
  e.start(1, key_of(4));
  (void)e.end[1].take_outgoing();
  auto altered = offer;
  altered[12 + 20] ^= 0x40;  // a bit of A's share; the ICRC made good again
  wire::seal(altered, altered.size() - wire::kIcrcBytes);
  auto elsewhere = offer;
  elsewhere[12 + 3] ^= 1;  // another source QP
  wire::seal(elsewhere, elsewhere.size() - wire::kIcrcBytes);
  e.end[1].on_datagram(e.now, altered);
  e.end[1].on_datagram(e.now, elsewhere);
  EXPECT_EQ(e.end[1].counters().offers_refused, 2u);
  EXPECT_TRUE(e.end[1].take_outcomes().empty());
  EXPECT_TRUE(e.end[1].take_outgoing().empty());
  for (int i = 0; i < 1000; ++i) e.end[1].on_datagram(e.now, offer);  // the real one, replayed
  EXPECT_EQ(e.end[1].take_outcomes().size(), 1u);
  EXPECT_EQ(e.end[1].take_outgoing().size(), 1u);
}

}  // namespace
}  // namespace mrc::secure
