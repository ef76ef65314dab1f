// Loss detection under reordering: a retransmission whose original arrives after all is
// recognised from the SACK's echo (Eifel-style) and the reordering window widens, so a plane
// that is slower than the others (its queues deeper) stops making RACK declare its packets lost.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "core/cc/nscc.h"
#include "core/wire/packet.h"
#include "pair.h"

namespace mrc {
namespace {

using test::Pair;
using test::small_config;

// The PSN and the retransmit flag of a data packet, or nothing for control packets.
struct DataInfo {
  bool data = false;
  Psn psn;
  bool retransmit = false;
};

DataInfo data_info(const std::vector<uint8_t>& bytes) {
  auto decoded = wire::decode(bytes, wire::DecodeOptions{});
  if (!decoded.ok()) return {};
  const auto* d = std::get_if<wire::DataPacket>(&decoded.value());
  if (d == nullptr) return {};
  return {true, d->header.bth.psn, d->header.bth.retransmit};
}

// One packet of A's write is held 40 us (its path's queue), long enough for RACK to declare it
// lost; its retransmission is held 200 us, so the original arrives first and is the one
// acknowledged (A's tail probes are held too, so that their answers do not acknowledge it
// first). A must count the retransmission as spurious and give the EV back.
TEST(LossDetection, RecognisesARetransmissionWhoseOriginalArrived) {
  QpConfig config = small_config();
  config.ev_loss_strike_uses = 0;  // one strike, so that the loss retires the EV to give back
  Pair pair(1, config, 1 << 20);
  const Psn slow = Psn(77 + 10);  // A's initial PSN is 77
  pair.hold = [&](int from, const std::vector<uint8_t>& bytes, const TxMeta&) {
    const DataInfo d = data_info(bytes);
    if (from == 0 && !d.data) return Duration{100'000};  // A's tail probes answer after the SACK
    if (from != 0 || !d.data || d.psn != slow) return Duration{0};
    return Duration{d.retransmit ? 200'000 : 40'000};
  };
  // Two writes 5 us apart: the second's packets, acknowledged first, make RACK declare the
  // held packet lost.
  ASSERT_TRUE(pair.write(0, 0, 64 << 10, 1).ok());
  pair.run(Instant{5'000});
  ASSERT_TRUE(pair.write(0, 64 << 10, 64 << 10, 2).ok());
  pair.run(Instant{50'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 2u);
  EXPECT_EQ(0, std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), 128 << 10));
  const QpStats s = pair.side[0].qp->stats();
  EXPECT_GE(s.losses_rack + s.losses_same_ev, 1u) << "the held packet was not declared lost";
  EXPECT_GE(s.spurious_retransmits, 1u);
  const EvSet* evs = pair.side[0].qp->evs();
  ASSERT_NE(evs, nullptr);
  const uint64_t revived = evs->transitions().revived;
  EXPECT_GE(revived, 1u);
}

// Plane 1's packets all wait 30 us longer than plane 0's (a deeper queue on that fabric). In a
// first write RACK and the tail probe declare some of them lost; those retransmissions prove
// spurious, the reordering window widens, and later writes see no RACK or probe losses at all.
TEST(LossDetection, ASlowerPlaneIsNotLoss) {
  Pair pair(2, small_config(), 1 << 20);
  pair.hold = [](int from, const std::vector<uint8_t>& bytes, const TxMeta& tx) {
    return from == 0 && data_info(bytes).data && tx.plane.value == 1 ? Duration{30'000}
                                                                     : Duration{0};
  };
  ASSERT_TRUE(pair.write(0, 0, 512 << 10, 0).ok());  // the harness fills plane 0's burst first
  pair.run(Instant{10'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 1u);
  const QpStats warm = pair.side[0].qp->stats();
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(pair.write(0, (512ull << 10) + i * (128ull << 10), 128 << 10, i).ok());
  pair.run(Instant{50'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 4u);
  EXPECT_EQ(0, std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), 1 << 20));
  const QpStats s = pair.side[0].qp->stats();
  EXPECT_GT(s.planes[1].packets_sent, warm.planes[1].packets_sent);
  EXPECT_EQ(s.losses_rack, warm.losses_rack);
  EXPECT_EQ(s.losses_probe, warm.losses_probe);
}

// The responder holds SACKs up to ack_delay (12 us here) and says for how long (the SACK's
// hold code); congestion control subtracts it. Eight packets, the last held 50 us on its way:
// the first seven are acknowledged by the timer, ~12 us after they arrived. NSCC's base RTT
// must be the link's round trip (4 us plus serialization), not the timer's 16 us; the loss
// timers keep the raw round trip.
TEST(LossDetection, HeldSacksAreNotQueueingDelay) {
  QpConfig config = small_config();
  config.ack_delay_ns = 12'000;
  config.ack_every_packets = 64;
  Pair pair(1, config, 1 << 20);
  pair.hold = [&](int from, const std::vector<uint8_t>& bytes, const TxMeta&) {
    const DataInfo d = data_info(bytes);
    return from == 0 && d.data && d.psn == Psn(77 + 7) ? Duration{50'000} : Duration{0};
  };
  ASSERT_TRUE(pair.write(0, 0, uint64_t{8} * config.mtu_bytes, 1).ok());
  pair.run(Instant{10'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 1u);
  const auto* nscc = dynamic_cast<const Nscc*>(pair.side[0].qp->congestion());
  ASSERT_NE(nscc, nullptr);
  EXPECT_LT(nscc->base_rtt().ns, 8'000);
  const QpStats s = pair.side[0].qp->stats();
  EXPECT_GE(s.rtt.smoothed_ns, 12'000);  // the raw samples include the hold
}

// A receiver that is slow, not lossy (a software endpoint descheduled for 200 us): every data
// packet of A's second write, sent as one window, waits 200 us on its way, and nothing is lost.
// A's tail timer fires several times meanwhile (backing off from 1.5 RTT), with nothing new to
// send; each firing resends at most a few of the oldest packets, so the write is not sent again
// as a whole (which the first firing did when it resent everything unacknowledged), and it
// arrives intact.
TEST(LossDetection, ASlowReceiverIsNotSentTheWholeWindowAgain) {
  QpConfig config = small_config();
  config.cc = CcAlgorithm::kFixed;  // the whole write in flight at once
  config.fixed_window_bytes = 1 << 20;
  Pair pair(1, config, 1 << 20);
  bool slow = false;
  pair.hold = [&](int from, const std::vector<uint8_t>& bytes, const TxMeta&) {
    return slow && from == 0 && data_info(bytes).data ? Duration{200'000} : Duration{0};
  };
  ASSERT_TRUE(pair.write(0, 0, 64 << 10, 1).ok());  // an RTT sample first
  pair.run(Instant{1'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 1u);
  const QpStats before = pair.side[0].qp->stats();
  slow = true;
  const uint64_t packets = (256u << 10) / config.mtu_bytes;
  ASSERT_TRUE(pair.write(0, 64 << 10, 256 << 10, 2).ok());
  pair.run(Instant{20'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 1u);
  EXPECT_EQ(0, std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), 320 << 10));
  const QpStats s = pair.side[0].qp->stats();
  EXPECT_GE(s.losses_tail - before.losses_tail, 1u)
      << "the tail timer never fired: the test tests nothing";
  EXPECT_EQ(s.timeouts, before.timeouts);
  EXPECT_LT(s.retransmits - before.retransmits, packets) << packets << " packets written";
}

// A receiver late with a whole message (a software endpoint waking up): A's tail timer resends
// its oldest packets, and the originals' SACK arrives a few microseconds after the resend,
// sooner than any round trip A has measured, so it is theirs and the resend was spurious. A
// SACK names only its trigger's copy; without the timing check each of the other packets
// struck its EV, and on loopback ping-pongs of 64 KiB such strikes retired dozens of EVs.
TEST(LossDetection, ATailResentJustBeforeTheOriginalsArriveRetiresNoEv) {
  QpConfig config = small_config();
  config.ev_loss_strike_uses = 0;   // one strike: each undetected spurious loss retires an EV
  config.cc = CcAlgorithm::kFixed;  // the whole message in flight at once
  config.fixed_window_bytes = 1 << 20;
  Pair pair(1, config, 1 << 20);
  Duration data_hold{20'000};  // every RTT sample at least 20 us
  pair.hold = [&](int from, const std::vector<uint8_t>& bytes, const TxMeta&) {
    const DataInfo d = data_info(bytes);
    if (from != 0 || !d.data) return Duration{0};
    return d.retransmit ? Duration{20'000} : data_hold;
  };
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(pair.write(0, i * (8 << 10), 8 << 10, i + 1).ok());
    pair.run(Instant{static_cast<int64_t>(1'000'000 * (i + 1))});
  }
  ASSERT_EQ(pair.drain(0, false).size(), 4u);
  const QpStats before = pair.side[0].qp->stats();
  ASSERT_GE(before.rtt.min_ns, 20'000);
  // The tail timer fires 1.5 smoothed RTTs after the message leaves; its originals arrive
  // 6 us after that (a 26 us RTT would be needed for that to be the resend's SACK).
  data_hold = Duration{before.rtt.smoothed_ns * 3 / 2 + 6'000};
  const uint64_t offset = 32 << 10;
  ASSERT_TRUE(pair.write(0, offset, uint64_t{8} * config.mtu_bytes, 9).ok());
  pair.run(Instant{20'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 1u);
  EXPECT_EQ(0, std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(),
                           offset + uint64_t{8} * config.mtu_bytes));
  const QpStats s = pair.side[0].qp->stats();
  ASSERT_GE(s.losses_tail - before.losses_tail, 2u) << "the tail timer did not resend";
  EXPECT_GE(s.spurious_retransmits - before.spurious_retransmits,
            s.losses_tail - before.losses_tail);
  const EvSet* evs = pair.side[0].qp->evs();
  ASSERT_NE(evs, nullptr);
  EXPECT_EQ(evs->transitions().to_assumed_bad, evs->transitions().revived)
      << "an EV stayed retired for a loss that was not one";
  EXPECT_EQ(s.timeouts, 0u);
}

// Plane 0 drops A's data silently (a failed direction of a link, which no link state reports).
// Small writes, one at a time: each copy that left by plane 0 is lost, and with nothing new to
// send its resend must leave by another plane. Resent on plane 0 again (the plane the harness
// polls first), each copy waited out a doubled tail timer until the plane's EVs were retired or
// the RTO fired.
TEST(LossDetection, ATailResendLeavesByAnotherPlane) {
  QpConfig config = small_config();
  Pair pair(4, config, 1 << 20);
  std::map<uint32_t, std::vector<uint8_t>> planes_of;  // PSN -> the planes of its copies
  bool cut = false;
  pair.filter = [&](int from, std::vector<uint8_t>& bytes, RxMeta&, const TxMeta& tx) {
    const DataInfo d = data_info(bytes);
    if (cut && from == 0 && d.data) planes_of[d.psn.value].push_back(tx.plane.value);
    return !(cut && from == 0 && d.data && tx.plane.value == 0);
  };
  ASSERT_TRUE(pair.write(0, 0, 64 << 10, 1000).ok());  // RTT samples over all four planes first
  pair.run(Instant{1'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 1u);
  cut = true;
  for (uint64_t i = 0; i < 200; ++i) {
    ASSERT_TRUE(pair.write(0, i * 64, 64, i + 1).ok());
    pair.run(pair.now() + Duration{5'000'000});
    ASSERT_EQ(pair.drain(0, false).size(), 1u) << "write " << i << " did not complete";
  }
  EXPECT_EQ(0,
            std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), size_t{200} * 64));
  size_t lost_on_0 = 0;
  for (const auto& [psn, planes] : planes_of) {
    for (size_t k = 0; k + 1 < planes.size(); ++k) {
      if (planes[k] != 0) continue;
      ++lost_on_0;
      EXPECT_NE(planes[k + 1], 0) << "PSN " << psn << " was resent on the plane that lost it";
    }
  }
  EXPECT_GE(lost_on_0, 1u) << "no copy left by plane 0: the test tests nothing";
  EXPECT_EQ(pair.side[0].qp->stats().timeouts, 0u);
}

// A ping-pong of 64-byte writes, each side writing once the other's write completed, with 1 % of
// all datagrams (data and acknowledgements, both ways, every plane) dropped at random. A lost
// packet of a message with nothing queued behind it is seen by no later SACK: only the tail
// timer repairs it before the retransmission timeout, resending at 1.5 smoothed RTTs and then at
// doubling intervals, so at 1 % loss a repair that fails until the RTO needs several losses in a
// row. No exchange may wait for the timeout, and every byte arrives.
TEST(LossDetection, APingPongAtOnePercentLossIsRepairedBeforeTheTimeout) {
  Pair pair(4, small_config(), 1 << 20, /*seed=*/7);
  std::mt19937_64 rng(7);
  std::bernoulli_distribution drop(0.01);
  bool lossy = false;
  uint64_t dropped = 0;
  pair.filter = [&](int, std::vector<uint8_t>&, RxMeta&, const TxMeta&) {
    const bool lose = lossy && drop(rng);
    dropped += lose ? 1 : 0;
    return !lose;
  };
  for (int side = 0; side < 2; ++side) {  // RTT samples on every plane first
    ASSERT_TRUE(pair.write(side, 0, 64 << 10, 1).ok());
    pair.run(pair.now() + Duration{1'000'000});
    ASSERT_EQ(pair.drain(side, false).size(), 1u);
  }
  lossy = true;
  constexpr uint64_t kExchanges = 3000;
  for (uint64_t i = 0; i < kExchanges; ++i) {
    for (int side = 0; side < 2; ++side) {
      ASSERT_TRUE(pair.write(side, (i % 1000) * 64, 64, i + 2).ok());
      const Instant give_up = pair.now() + Duration{100'000'000};
      while (pair.drain(side, false).empty()) {
        ASSERT_LT(pair.now(), give_up) << "exchange " << i << " (side " << side << ") hung";
        pair.run(pair.now() + Duration{1000});
      }
    }
  }
  EXPECT_GE(dropped, kExchanges * 4 / 100 / 2) << "too few losses: the test tests nothing";
  for (int side = 0; side < 2; ++side) {
    EXPECT_EQ(pair.side[side].qp->stats().timeouts, 0u) << "side " << side;
    EXPECT_EQ(0, std::memcmp(pair.side[side].source.data(), pair.side[1 - side].target.data(),
                             size_t{1000} * 64));
  }
}

}  // namespace
}  // namespace mrc
