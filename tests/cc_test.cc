// Congestion control in isolation: NSCC's four quadrants, quick adapt and its gate, and the
// decrease sized by the average delay, fed synthetic acknowledgements at a known delivery rate
// and RTT.
#include <gtest/gtest.h>

#include "core/cc/nscc.h"
#include "problem.h"

namespace mrc {
namespace {

constexpr uint32_t kMtu = 4096;

// Acknowledges one MTU every `gap_ns` for `duration_ns`, each with the given RTT and ECN echo.
Instant feed(Nscc& cc, Instant start, int64_t duration_ns, int64_t gap_ns, int64_t rtt_ns,
             bool ecn) {
  Instant now = start;
  for (int64_t t = 0; t < duration_ns; t += gap_ns) {
    now = start + Duration{t};
    cc.on_ack(AckSample{.now = now, .acked_bytes = kMtu, .rtt = Duration{rtt_ns}, .ecn = ecn});
  }
  return now;
}

NsccConfig config_with_base_rtt(int64_t base_rtt_ns) {
  NsccConfig c;
  c.base_rtt_ns = base_rtt_ns;
  c.initial_window_bytes = 256 << 10;
  return c;
}

TEST(Nscc, GrowsProportionallyBelowTargetDelay) {
  Nscc cc(config_with_base_rtt(10'000), kMtu);
  const uint64_t before = cc.window_bytes();
  feed(cc, Instant{0}, 100'000, 1'000, 11'000, false);         // delay 1 us, target 5 us
  EXPECT_GT(cc.window_bytes(), before + uint64_t{10} * kMtu);  // ~0.2 MTU per ack here
}

TEST(Nscc, GrowsSlowlyAboveTargetWithoutEcn) {
  Nscc fast(config_with_base_rtt(10'000), kMtu);
  Nscc fair(config_with_base_rtt(10'000), kMtu);
  feed(fast, Instant{0}, 100'000, 1'000, 11'000, false);
  feed(fair, Instant{0}, 100'000, 1'000, 30'000, false);  // delay 20 us > target
  EXPECT_GT(fair.window_bytes(), 256u << 10);
  EXPECT_LT(fair.window_bytes(), fast.window_bytes());
}

TEST(Nscc, DecreasesOnEcnWithDelayAndHoldsOnEcnAlone) {
  Nscc marked(config_with_base_rtt(10'000), kMtu);
  feed(marked, Instant{0}, 100'000, 1'000, 30'000, true);
  EXPECT_LT(marked.window_bytes(), 256u << 10);

  Nscc steered(config_with_base_rtt(10'000), kMtu);
  feed(steered, Instant{0}, 100'000, 1'000, 11'000, true);  // ECN but no delay: EV's problem
  EXPECT_EQ(steered.window_bytes(), 256u << 10);
}

TEST(Nscc, TimeoutHalvesTheWindow) {
  Nscc cc(config_with_base_rtt(10'000), kMtu);
  cc.on_timeout(Instant{0});
  EXPECT_EQ(cc.window_bytes(), 128u << 10);
}

// Quick adapt on a path with little queueing: the window falls to about what two base RTTs
// delivered.
TEST(Nscc, QuickAdaptCutsToWhatWasDelivered) {
  NsccConfig c = config_with_base_rtt(100'000);
  c.initial_window_bytes = 4u << 20;
  Nscc cc(c, kMtu);
  // 1 MTU per 4 us (about 8 Gbit/s) at the base RTT: 200 us deliver ~200 KiB.
  Instant now = feed(cc, Instant{0}, 1'000'000, 4'000, 100'000, false);
  cc.on_trim(now, kMtu);
  feed(cc, now, 400'000, 4'000, 100'000, false);
  EXPECT_LT(cc.window_bytes(), 400u << 10);
  EXPECT_GT(cc.window_bytes(), 100u << 10);
}

// A loss (not a trim) on a path without queueing is random loss, a path signal for the EV set:
// the window stays. The same loss while the average delay is above target is congestion (a
// drop-tail fabric) and quick adapt cuts the window.
TEST(Nscc, ALossOnAQuietPathIsNotARateSignal) {
  NsccConfig c = config_with_base_rtt(100'000);
  c.initial_window_bytes = 4u << 20;
  Nscc quiet(c, kMtu), queued(c, kMtu);
  Instant now = feed(quiet, Instant{0}, 1'000'000, 4'000, 100'000, false);
  quiet.on_loss(now, kMtu);
  feed(quiet, now, 400'000, 4'000, 100'000, false);
  EXPECT_GT(quiet.window_bytes(), 3u << 20);
  // RTT 2.5x the base: the average delay is above the default target (half the base RTT) but
  // below the quick-adapt threshold (4 x target), so only the loss can cut the window.
  now = feed(queued, Instant{0}, 1'000'000, 4'000, 250'000, false);
  queued.on_loss(now, kMtu);
  feed(queued, now, 700'000, 4'000, 250'000, false);
  EXPECT_LT(queued.window_bytes(), 1u << 20);
}

// Where queues are deep (no ECN; RTT 50x the base), a round lasts the RTT the packets see:
// a loss cuts the window to one such RTT's delivery, not to two base RTTs' worth (which
// would leave the path almost idle and regrow at one MTU per RTT).
TEST(Nscc, QuickAdaptCountsAWholeRttWhenQueuesAreDeep) {
  NsccConfig c;  // base RTT learned
  c.initial_window_bytes = 1u << 20;
  Nscc cc(c, kMtu);
  cc.on_ack(AckSample{.now = Instant{0}, .acked_bytes = kMtu, .rtt = Duration{100'000}});
  // 1 Gbit/s: one MTU every 32.768 us; RTT 5 ms delivers ~610 KiB.
  Instant now = feed(cc, Instant{1000}, 50'000'000, 32'768, 5'000'000, false);
  ASSERT_EQ(cc.base_rtt().ns, 100'000);
  cc.on_loss(now, kMtu);
  feed(cc, now, 12'000'000, 32'768, 5'000'000, false);
  EXPECT_GT(cc.window_bytes(), 400u << 10);
}

// UET's qa_gate: a round that delivered more than max_window >> qa_gate is not an incast, and
// a trim in it does not cut the window; with the gate off (0) the same trim does.
TEST(Nscc, QuickAdaptIsGatedByWhatTheRoundDelivered) {
  NsccConfig c = config_with_base_rtt(10'000);
  c.initial_window_bytes = 2u << 20;
  c.max_window_bytes = 4u << 20;  // gate 3: rounds delivering >= 512 KiB are spared; the window
                                  // grows to 4 MiB at zero queueing before the loss
  NsccConfig ungated = c;
  ungated.qa_gate = 0;
  Nscc gated_cc(c, kMtu), ungated_cc(ungated, kMtu);
  for (Nscc* cc : {&gated_cc, &ungated_cc}) {
    // 1 MTU per 50 ns (~650 Gbit/s): a 20 us round delivers ~1.6 MiB.
    Instant now = feed(*cc, Instant{0}, 100'000, 50, 10'000, false);
    cc->on_trim(now, kMtu);
    feed(*cc, now, 10'000, 50, 10'000, false);  // the trimmed round ends within these 10 us
  }
  EXPECT_GT(gated_cc.window_bytes(), 3u << 20);    // grown towards max_window, not cut
  EXPECT_LT(ungated_cc.window_bytes(), 2u << 20);  // cut to one round's ~1.6 MiB
}

// The multiplicative decrease follows the average queueing delay: one path's burst of marked,
// delayed acknowledgements after a long calm does not cut the window; the same marks once the
// delay has stayed high do.
TEST(Nscc, DecreaseFollowsTheAverageDelayNotOneSample) {
  Nscc calm(config_with_base_rtt(10'000), kMtu);
  Instant now = feed(calm, Instant{0}, 200'000, 1'000, 11'000, false);  // 1 us of queueing
  const uint64_t before = calm.window_bytes();
  feed(calm, now + Duration{1'000}, 3'000, 1'000, 40'000, true);  // three samples at 30 us, ECN
  EXPECT_GE(calm.window_bytes(), before);

  Nscc loaded(config_with_base_rtt(10'000), kMtu);
  now = feed(loaded, Instant{0}, 200'000, 1'000, 40'000, false);  // 30 us of queueing throughout
  const uint64_t loaded_before = loaded.window_bytes();
  feed(loaded, now + Duration{1'000}, 3'000, 1'000, 40'000, true);
  EXPECT_LT(loaded.window_bytes(), loaded_before);
}

}  // namespace
}  // namespace mrc

namespace mrc {
namespace {

// A SACK's rcv_cwnd_pen (the receiver sees an incast) makes the next trim take pen/128 of the
// window, once per base RTT, never before an RTT sample; without it a trim takes its bytes.
Instant ack_with_penalty(Nscc& cc, Instant now, uint8_t penalty) {
  cc.on_ack(
      AckSample{.now = now, .acked_bytes = 0, .rtt = Duration{-1}, .receiver_penalty = penalty});
  return now;
}

TEST(Nscc, ReceiverPenaltyMakesATrimARateSignal) {
  NsccConfig c = config_with_base_rtt(10'000);
  c.quick_adapt = false;  // the trims' own effect only
  Nscc plain(c, kMtu);
  Nscc cut(c, kMtu);
  const double w = 256 << 10;
  ack_with_penalty(plain, Instant{999'000}, 0);
  ack_with_penalty(cut, Instant{999'000}, 32);  // a quarter
  for (Nscc* cc : {&plain, &cut}) cc->on_trim(Instant{1'000'000}, kMtu);
  EXPECT_EQ(plain.window_bytes(), static_cast<uint64_t>(w - kMtu));
  EXPECT_EQ(cut.window_bytes(), static_cast<uint64_t>(w * 0.75 - kMtu));
  cut.on_trim(Instant{1'005'000}, kMtu);  // within the base RTT: the bytes only
  EXPECT_EQ(cut.window_bytes(), static_cast<uint64_t>(w * 0.75 - 2 * kMtu));
  cut.on_trim(Instant{1'011'000}, kMtu);  // a base RTT later: another quarter
  EXPECT_EQ(cut.window_bytes(), static_cast<uint64_t>((w * 0.75 - 2 * kMtu) * 0.75 - kMtu));
  ack_with_penalty(cut, Instant{1'012'000}, 0);  // the incast is over
  const uint64_t before = cut.window_bytes();
  cut.on_trim(Instant{1'030'000}, kMtu);
  EXPECT_EQ(cut.window_bytes(), before - kMtu);

  NsccConfig learn;  // base RTT learned from samples: none yet, so no fraction is taken
  learn.initial_window_bytes = 256 << 10;
  Nscc blind(learn, kMtu);
  ack_with_penalty(blind, Instant{0}, 64);
  blind.on_trim(Instant{0}, kMtu);
  EXPECT_EQ(blind.window_bytes(), static_cast<uint64_t>(w - kMtu));
}

TEST(Nscc, IncastPenaltyOutOfRangeIsRefused) {
  QpConfig q;
  q.incast_penalty = 128;
  EXPECT_NE(problem(q.validate(1)).find("incast_penalty"), std::string::npos);
  q.incast_penalty = 127;
  EXPECT_EQ(problem(q.validate(1)), "");
}

}  // namespace
}  // namespace mrc
