// Explicit EV lists (OCP EV mode EXP): EvSet uses exactly the listed EVs on their planes, with
// repeats as weights (an ECN mark skips every copy for the rest of the rotation), maps echoed EVs
// back by value, has no backups and never regenerates; QpConfig::validate refuses bad lists; two
// QPs given the same one-EV list send every packet on that one EV (the MRC paper's "two flows
// forced onto one EV").
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "core/ev_set.h"
#include "mrc/config.hpp"
#include "problem.h"

namespace mrc {
namespace {

PlaneId plane(int p) {
  return PlaneId(static_cast<uint8_t>(p));
}
ExplicitEv ev(int p, uint32_t value) {
  return ExplicitEv{plane(p), Ev(value)};
}

EvSetConfig listed(int planes, std::vector<ExplicitEv> list, uint16_t min_active = 1) {
  EvSetConfig c;
  c.planes = planes;
  c.min_active = min_active;
  c.explicit_evs = std::move(list);
  c.loss_strike_uses = 0;  // one strike: the tests here are about what retirement does
  return c;
}

TEST(EvList, UsesExactlyTheListedEvsOnTheirPlanes) {
  EvSet evs(listed(2, {ev(0, 7000), ev(0, 7001), ev(1, 9000)}), 1);
  ASSERT_TRUE(evs.is_explicit());
  EXPECT_EQ(evs.size(), 3u);
  std::map<uint32_t, int> seen;
  for (int i = 0; i < 100; ++i) {
    const uint16_t s = evs.next(plane(0));
    ASSERT_NE(s, EvSet::kNoSlot);
    EXPECT_EQ(evs.slot(s).plane, plane(0));
    ++seen[evs.slot(s).ev.value];
  }
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[7000], 50);
  EXPECT_EQ(seen[7001], 50);
  const uint16_t s1 = evs.next(plane(1));
  EXPECT_EQ(evs.slot(s1).ev.value, 9000u);
}

TEST(EvList, AnEvListedTwiceCarriesTwoShares) {
  EvSet evs(listed(1, {ev(0, 5), ev(0, 6), ev(0, 5)}), 3);
  EXPECT_EQ(evs.size(), 2u);  // one slot per distinct EV
  std::map<uint32_t, int> seen;
  for (int i = 0; i < 300; ++i) ++seen[evs.slot(evs.next(plane(0))).ev.value];
  EXPECT_EQ(seen[5], 200);
  EXPECT_EQ(seen[6], 100);
}

TEST(EvList, AnEcnMarkSkipsEveryCopyForTheRestOfTheRotation) {
  EvSet evs(listed(1, {ev(0, 5), ev(0, 5), ev(0, 5), ev(0, 6)}), 4);
  evs.on_ecn(evs.slot_of(Ev(5)));                        // at the start of a rotation
  EXPECT_EQ(evs.slot(evs.next(plane(0))).ev.value, 6u);  // all three copies of 5 passed over
  std::map<uint32_t, int> seen;
  for (int i = 0; i < 4; ++i) ++seen[evs.slot(evs.next(plane(0))).ev.value];  // the next rotation
  EXPECT_EQ(seen[5], 3);
  EXPECT_EQ(seen[6], 1);
}

TEST(EvList, PlaneWithoutListedEvsHasNothingToSend) {
  EvSet evs(listed(3, {ev(0, 11), ev(2, 12)}), 1);
  EXPECT_FALSE(evs.has_usable(plane(1)));
  EXPECT_EQ(evs.next(plane(1)), EvSet::kNoSlot);
  EXPECT_TRUE(evs.has_usable(plane(2)));
}

TEST(EvList, EchoedEvsMapBackByValue) {
  EvSet evs(listed(2, {ev(0, 0xDEADBEEF), ev(1, 3), ev(0, 42)}), 1);
  for (size_t i = 0; i < evs.size(); ++i)
    EXPECT_EQ(evs.slot_of(evs.slot(static_cast<uint16_t>(i)).ev), i);
  EXPECT_EQ(evs.slot_of(Ev(4)), EvSet::kNoSlot);
  EXPECT_EQ(evs.slot_of(Ev(0xDEADBEEE)), EvSet::kNoSlot);
}

TEST(EvList, LossTakesTheEvOutWithoutAReplacementAndProbesBringItBack) {
  EvSet evs(listed(1, {ev(0, 100), ev(0, 101)}), 1);
  const uint16_t bad = evs.slot_of(Ev(100));
  evs.on_loss(bad, Instant{0});
  EXPECT_EQ(evs.slot(bad).state, EvState::kAssumedBad);
  EXPECT_EQ(evs.transitions().replaced, 0u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(evs.slot(evs.next(plane(0))).ev.value, 101u);
  // Probes revive it; a long run of unanswered probes never changes its value.
  Instant now{0};
  for (int i = 0; i < 40; ++i) {
    now = evs.next_probe_at(bad);
    ASSERT_EQ(evs.probe_due(plane(0), now), bad);
    evs.on_probe_sent(bad, now);
  }
  EXPECT_EQ(evs.slot(bad).ev.value, 100u);
  EXPECT_EQ(evs.transitions().regenerated, 0u);
  for (int i = 0; i < 3; ++i) {
    evs.on_probe_answered(bad);
    if (i < 2) evs.on_probe_sent(bad, evs.next_probe_at(bad));
  }
  EXPECT_EQ(evs.slot(bad).state, EvState::kGood);
}

TEST(EvList, FloorCountsDistinctEvs) {
  EvSet evs(listed(1, {ev(0, 1), ev(0, 2), ev(0, 2)}, 2), 1);
  evs.on_loss(evs.slot_of(Ev(1)), Instant{0});  // would leave 1 < floor 2
  EXPECT_EQ(evs.slot(evs.slot_of(Ev(1))).state, EvState::kSkip);
  EXPECT_EQ(evs.transitions().floor_held, 1u);
}

TEST(EvList, DeniedEvLeavesTheRotation) {
  EvSet evs(listed(1, {ev(0, 1), ev(0, 2)}), 1);
  ASSERT_TRUE(evs.set_denied(evs.slot_of(Ev(2)), true));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(evs.slot(evs.next(plane(0))).ev.value, 1u);
  ASSERT_TRUE(evs.set_denied(evs.slot_of(Ev(1)), true));
  EXPECT_EQ(evs.next(plane(0)), EvSet::kNoSlot);
}

TEST(EvList, ConfigValidationSaysWhatIsWrong) {
  QpConfig c;
  c.ev_list = {ev(0, 1), ev(1, 2)};
  c.ev_min_active = 1;
  EXPECT_EQ(problem(c.validate(2)), "");
  EXPECT_NE(problem(c.validate(1)).find("names plane 1"), std::string::npos)
      << problem(c.validate(1));
  c.ev_list = {ev(0, 1), ev(1, 1)};
  EXPECT_NE(problem(c.validate(2)).find("an EV belongs to one plane"), std::string::npos)
      << problem(c.validate(2));
  c.ev_list = {ev(0, 1), ev(0, 1)};
  c.ev_min_active = 2;
  EXPECT_NE(problem(c.validate(1)).find("ev_min_active"), std::string::npos)
      << problem(c.validate(1));
  c.ev_list.assign(kMaxExplicitEvs + 1, ev(0, 1));
  c.ev_min_active = 1;
  EXPECT_NE(problem(c.validate(1)).find("ev_list entries"), std::string::npos);
  // ev_count is not checked against the planes when a list is given.
  c.ev_list = {ev(0, 1), ev(1, 2), ev(2, 3)};
  c.ev_count = 4;
  EXPECT_EQ(problem(c.validate(3)), "");
}

}  // namespace
}  // namespace mrc
