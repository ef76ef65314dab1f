// Controller EV probes (Endpoint::prober, QPN 0): an endpoint request on exactly the EV and
// plane asked for, answered by the peer endpoint back to the sender whether or not a QP joins
// the two, with the RTT measured by the engine. Probes do not disturb a QP's traffic or EV
// states, lost ones are forgotten, and every queue is bounded (a request flood is counted).
#include <gtest/gtest.h>

#include "core/wire/packet.h"
#include "pair.h"

namespace mrc {
namespace {

using test::Pair;
using test::small_config;

PlaneId plane(int p) {
  return PlaneId(static_cast<uint8_t>(p));
}

TEST(EvProbe, AnsweredWithRttOnTheChosenEvWithoutAnyQp) {
  Pair pair(2, small_config(), 1 << 16, 1, Duration{5000});
  for (auto& s : pair.side) s.qp->to_reset();  // no connection at all
  EvProber& prober = pair.side[0].endpoint->prober();
  Ev seen{0};
  bool reply_seen = false;
  pair.filter = [&](int from, std::vector<uint8_t>&, RxMeta& rx, const TxMeta& tx) {
    if (from == 0) seen = tx.ev;
    if (from == 1) reply_seen = tx.reply && tx.plane == plane(1);
    rx.source = 0xABCD;  // what a datapath would give as the sender
    return true;
  };
  ASSERT_TRUE(prober.probe(7, plane(1), Ev(50123), 0x10007));
  pair.run(Instant{1'000'000});
  EXPECT_EQ(seen, Ev(50123));
  EXPECT_TRUE(reply_seen);
  const auto answer = prober.take_answer();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->request_id, 0x10007u);
  EXPECT_EQ(answer->plane, plane(1));
  EXPECT_GE(answer->rtt.ns, 10000);  // two one-way delays of the harness
  EXPECT_FALSE(prober.take_answer().has_value());
}

TEST(EvProbe, AReplyGoesBackToTheRequestsSender) {
  Pair pair(1, small_config(), 1 << 16);
  uint64_t reply_to = 0;
  uint32_t reply_peer = 99;
  pair.filter = [&](int from, std::vector<uint8_t>&, RxMeta& rx, const TxMeta& tx) {
    if (from == 0) rx.source = 0x7F000001ull << 16 | 50000;
    if (from == 1 && tx.reply) {
      reply_to = tx.reply_to;
      reply_peer = tx.peer;
    }
    return true;
  };
  ASSERT_TRUE(pair.side[0].endpoint->prober().probe(3, plane(0), Ev(1), 1));
  pair.run(Instant{1'000'000});
  EXPECT_EQ(reply_to, 0x7F000001ull << 16 | 50000);
  EXPECT_EQ(reply_peer, 0u);  // the harness's RxMeta::peer for side 0
}

TEST(EvProbe, DeniedEvIsStillProbedAndTrafficIsUnchanged) {
  Pair pair(2, small_config(), 1 << 16);
  EvSet* evs = pair.side[0].qp->evs();
  ASSERT_NE(evs, nullptr);
  ASSERT_TRUE(evs->set_denied(0, true));
  ASSERT_TRUE(pair.side[0].endpoint->prober().probe(0, evs->slot(0).plane, evs->slot(0).ev, 1));
  ASSERT_TRUE(pair.write(0, 0, 4096, 9).ok());
  pair.run(Instant{1'000'000});
  EXPECT_TRUE(pair.side[0].endpoint->prober().take_answer().has_value());
  EXPECT_EQ(pair.drain(0, false).size(), 1u);
  EXPECT_EQ(evs->slot(0).state, EvState::kDenied);
}

TEST(EvProbe, LostProbeGivesNoAnswerAndIsForgotten) {
  Pair pair(2, small_config(), 1 << 16);
  EvProber& prober = pair.side[0].endpoint->prober();
  pair.filter = [](int from, std::vector<uint8_t>&, RxMeta&, const TxMeta&) { return from != 0; };
  ASSERT_TRUE(prober.probe(0, plane(0), Ev(5), 5));
  pair.run(Instant{1'000'000});
  EXPECT_FALSE(prober.take_answer().has_value());
  prober.forget();
  EXPECT_FALSE(prober.wants_to_send());
}

TEST(EvProbe, BoundedProbesAndAnswers) {
  Pair pair(1, small_config(), 1 << 16);
  EvProber& prober = pair.side[0].endpoint->prober();
  for (size_t i = 0; i < EvProber::kMaxProbes; ++i)
    ASSERT_TRUE(prober.probe(0, plane(0), Ev(1), static_cast<uint32_t>(i)));
  EXPECT_FALSE(prober.probe(0, plane(0), Ev(1), 999));
  // A flood of requests at the other side: at most kMaxResponses answers wait; the rest are
  // counted.
  EvProber& target = pair.side[1].endpoint->prober();
  wire::EndpointRequest request;
  request.op = wire::EndpointOp::kEvProbe;
  for (size_t i = 0; i < EvProber::kMaxResponses + 10; ++i)
    target.on_request(Instant{0}, request, RxMeta{}, 1);
  EXPECT_EQ(target.responses_dropped(), 10u);
}

TEST(EvProbe, PortStatusRequestsToQpnZeroAreIgnored) {
  Pair pair(1, small_config(), 1 << 16);
  EvProber& target = pair.side[1].endpoint->prober();
  wire::EndpointRequest request;
  request.op = wire::EndpointOp::kPortStatusUpdate;
  target.on_request(Instant{0}, request, RxMeta{}, 1);
  EXPECT_FALSE(target.wants_to_send());
}

}  // namespace
}  // namespace mrc

namespace mrc {
namespace {

// The requester latches "a background probe is due" until it can send one, and its deadline
// leaves probe times out meanwhile (a due probe waits for a transmit opportunity, not a timer).
// If the due EV recovers before its probe goes out, a poll that finds no probe due must drop
// the latch: kept, it hid the next EV's probe time from a driver that sleeps until the deadline.
TEST(EvBackgroundProbe, DeadlineShowsTheNextProbeOnceNoneIsDue) {
  test::Pair pair(2, test::small_config(), 1 << 16);
  QueuePair* qp = pair.side[0].qp;
  EvSet& evs = *qp->evs();
  const Instant t0{1'000'000};
  const uint16_t a = evs.next(PlaneId(1));
  const uint16_t b = evs.next(PlaneId(1));
  ASSERT_NE(a, b);
  for (int strike = 0; strike < 2; ++strike) evs.on_loss(a, t0);
  for (int strike = 0; strike < 2; ++strike) evs.on_loss(b, t0 + Duration::from_us(30));
  ASSERT_EQ(evs.slot(a).state, EvState::kAssumedBad);
  ASSERT_EQ(evs.slot(b).state, EvState::kAssumedBad);
  const Instant a_due = evs.next_probe_at(a);
  const Instant b_due = evs.next_probe_at(b);
  ASSERT_LT(a_due, b_due);
  qp->on_timer(a_due);  // a's probe is due: latched
  evs.revive(a);        // and a recovers before the probe goes out
  std::vector<uint8_t> buffer(wire::kMaxDatagramBytes);
  TxMeta meta;
  EXPECT_EQ(qp->poll_transmit(a_due, PlaneId(0), buffer, meta), 0u);  // nothing to send
  EXPECT_EQ(qp->next_deadline(), b_due);
}

}  // namespace
}  // namespace mrc
