// Loss detection under reordering: a retransmission whose original arrives after all is
// recognised from the SACK's echo (Eifel-style) and the reordering window widens, and a plane
// that is slower than the others (its queues deeper) does not make RACK declare its packets
// lost, since RACK compares a packet only with later ones on its own plane.
#include <gtest/gtest.h>

#include <cstring>

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
// acknowledged. A must count the retransmission as spurious and give the EV back.
TEST(LossDetection, RecognisesARetransmissionWhoseOriginalArrived) {
  Pair pair(1, small_config(), 1 << 20);
  const Psn slow = Psn(77 + 10);  // A's initial PSN is 77
  pair.hold = [&](int from, const std::vector<uint8_t>& bytes, const TxMeta&) {
    const DataInfo d = data_info(bytes);
    if (from != 0 || !d.data || d.psn != slow) return Duration{0};
    return Duration{d.retransmit ? 200'000 : 40'000};
  };
  ASSERT_TRUE(pair.write(0, 0, 256 << 10, 1).ok());
  pair.run(Instant{50'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 1u);
  EXPECT_EQ(0, std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), 256 << 10));
  const QpStats s = pair.side[0].qp->stats();
  EXPECT_GE(s.losses_rack + s.losses_same_ev, 1u) << "the held packet was not declared lost";
  EXPECT_GE(s.spurious_retransmits, 1u);
  const EvSet* evs = pair.side[0].qp->evs();
  ASSERT_NE(evs, nullptr);
  const uint64_t revived = evs->transitions().revived;
  EXPECT_GE(revived, 1u);
}

// Plane 1's packets all wait 30 us longer than plane 0's (a deeper queue on that fabric). Once
// the sender has seen both planes' RTTs (a first write), neither RACK nor a tail probe answered
// over plane 0 declares plane 1's packets lost: RACK compares a packet with later ones on its
// own plane, and across planes only after the RTT's spread. (With one RACK clock for every
// plane, plane 0's quick acknowledgements made plane 1's packets look lost throughout.)
TEST(LossDetection, ASlowerPlaneIsNotLoss) {
  Pair pair(2, small_config(), 1 << 20);
  pair.hold = [](int from, const std::vector<uint8_t>& bytes, const TxMeta& tx) {
    return from == 0 && data_info(bytes).data && tx.plane.value == 1 ? Duration{30'000} : Duration{0};
  };
  ASSERT_TRUE(pair.write(0, 0, 512 << 10, 0).ok());  // the harness fills plane 0's burst first
  pair.run(Instant{10'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 1u);
  const QpStats warm = pair.side[0].qp->stats();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(pair.write(0, (512ull << 10) + i * (128ull << 10), 128 << 10, i).ok());
  pair.run(Instant{50'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 4u);
  EXPECT_EQ(0, std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), 1 << 20));
  const QpStats s = pair.side[0].qp->stats();
  EXPECT_GT(s.planes[1].packets_sent, warm.planes[1].packets_sent);
  EXPECT_EQ(s.losses_rack, warm.losses_rack);
  EXPECT_EQ(s.losses_probe, warm.losses_probe);
}

}  // namespace
}  // namespace mrc
