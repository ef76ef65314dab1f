// Controller EV probes (QueuePair::probe_ev): an endpoint request on a chosen EV, answered by
// the peer QP, with the answer's RTT measured by the engine. Probes leave on the EV asked for
// whatever its state, wait while their plane is unusable, and are bounded.
#include <gtest/gtest.h>

#include "pair.h"

namespace mrc {
namespace {

using test::Pair;
using test::small_config;

TEST(EvProbe, AnsweredWithRttOnTheChosenEv) {
  Pair pair(2, small_config(), 1 << 16, 1, Duration{5000});
  QueuePair& qp = *pair.side[0].qp;
  const uint16_t slot = 3;
  const EvSet* evs = qp.evs();
  ASSERT_NE(evs, nullptr);
  const EvSet::Slot ev = evs->slot(slot);
  Ev seen{0};
  pair.filter = [&](int from, std::vector<uint8_t>&, RxMeta&, const TxMeta& tx) {
    if (from == 0 && !tx.is_data) seen = tx.ev;
    return true;
  };
  ASSERT_TRUE(qp.probe_ev(slot, 0x10007));
  pair.run(Instant{1'000'000});
  EXPECT_EQ(seen, ev.ev);
  const auto answer = qp.take_ev_probe_answer();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->request_id, 0x10007u);
  EXPECT_GE(answer->rtt.ns, 10000);  // two one-way delays of the harness
  EXPECT_FALSE(qp.take_ev_probe_answer().has_value());
}

TEST(EvProbe, DeniedEvIsStillProbedAndTrafficIsUnchanged) {
  Pair pair(2, small_config(), 1 << 16);
  QueuePair& qp = *pair.side[0].qp;
  EvSet* evs = qp.evs();
  ASSERT_NE(evs, nullptr);
  ASSERT_TRUE(evs->set_denied(0, true));
  ASSERT_TRUE(qp.probe_ev(0, 1));
  ASSERT_TRUE(pair.write(0, 0, 4096, 9).ok());
  pair.run(Instant{1'000'000});
  EXPECT_TRUE(qp.take_ev_probe_answer().has_value());
  EXPECT_EQ(pair.drain(0, false).size(), 1u);
  EXPECT_EQ(evs->slot(0).state, EvState::kDenied);
}

TEST(EvProbe, LostProbeGivesNoAnswerAndIsForgotten) {
  Pair pair(2, small_config(), 1 << 16);
  QueuePair& qp = *pair.side[0].qp;
  pair.filter = [](int from, std::vector<uint8_t>&, RxMeta&, const TxMeta& tx) { return from != 0 || tx.is_data; };
  ASSERT_TRUE(qp.probe_ev(1, 5));
  pair.run(Instant{1'000'000});
  EXPECT_FALSE(qp.take_ev_probe_answer().has_value());
  qp.forget_ev_probes();
  EXPECT_FALSE(qp.wants_to_send(pair.now()));
}

TEST(EvProbe, RefusedWhenNotConnectedBadSlotOrFull) {
  Pair pair(2, small_config(), 1 << 16);
  QueuePair& qp = *pair.side[0].qp;
  const EvSet* evs = qp.evs();
  ASSERT_NE(evs, nullptr);
  EXPECT_FALSE(qp.probe_ev(static_cast<uint16_t>(evs->size()), 1));
  for (size_t i = 0; i < QueuePair::kMaxEvProbes; ++i) ASSERT_TRUE(qp.probe_ev(0, static_cast<uint32_t>(i)));
  EXPECT_FALSE(qp.probe_ev(0, 999));
  qp.to_reset();
  EXPECT_FALSE(qp.probe_ev(0, 1));
}

}  // namespace
}  // namespace mrc
