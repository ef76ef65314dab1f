// The entropy-value set (src/core/ev_set.h) on its own: the split over planes, the rotation,
// SKIP, retirement to ASSUMED_BAD with same-plane replacement, the ev_min_active floor,
// background probes and revival, DENIED, the mapping of echoed EVs back to slots, and the two
// strikes before a loss retires an EV.
#include "core/ev_set.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

namespace mrc {
namespace {

EvSetConfig make_config(int planes, uint16_t active, uint16_t backups, uint16_t min_active = 1) {
  EvSetConfig c;
  c.planes = planes;
  c.active_count = active;
  c.backup_per_plane = backups;
  c.min_active = min_active;
  c.probe_interval = Duration{50'000};
  c.revive_probes = 3;
  c.loss_strike_uses = 0;  // one strike: most tests here are about what retirement does
  return c;
}

PlaneId plane(int p) {
  return PlaneId(static_cast<uint8_t>(p));
}

// The active, usable slots of `plane`, found by asking next() for one full rotation's worth.
std::set<uint16_t> active_slots(const EvSet& evs, PlaneId p) {
  std::set<uint16_t> out;
  for (uint16_t i = 0; i < static_cast<uint16_t>(evs.size()); ++i) {
    const EvSet::Slot& s = evs.slot(i);
    if (s.plane == p && s.active) out.insert(i);
  }
  return out;
}

TEST(EvSet, ActiveEvsAreSplitEvenlyOverPlanes) {
  EvSet evs(make_config(4, 32, 3), 1);
  EXPECT_EQ(evs.size(), 4u * (8 + 3));
  EXPECT_EQ(evs.usable_active(), 32);
  for (int p = 0; p < 4; ++p) {
    int active = 0, backup = 0;
    for (uint16_t i = 0; i < static_cast<uint16_t>(evs.size()); ++i) {
      const EvSet::Slot& s = evs.slot(i);
      if (s.plane != plane(p)) continue;
      EXPECT_EQ(s.state, EvState::kGood);
      (s.active ? active : backup)++;
    }
    EXPECT_EQ(active, 8) << "plane " << p;
    EXPECT_EQ(backup, 3) << "plane " << p;
    EXPECT_EQ(evs.usable_active(plane(p)), 8);
  }
  // EV values are distinct.
  std::set<uint32_t> values;
  for (uint16_t i = 0; i < static_cast<uint16_t>(evs.size()); ++i)
    values.insert(evs.slot(i).ev.value);
  EXPECT_EQ(values.size(), evs.size());
}

TEST(EvSet, NextStaysOnItsPlaneAndNeverRepeatsBackToBack) {
  EvSet evs(make_config(4, 16, 2), 7);
  for (int p = 0; p < 4; ++p) {
    uint16_t previous = EvSet::kNoSlot;
    for (int i = 0; i < 1000; ++i) {
      const uint16_t slot = evs.next(plane(p));
      ASSERT_NE(slot, EvSet::kNoSlot);
      EXPECT_EQ(evs.slot(slot).plane, plane(p));
      EXPECT_TRUE(evs.slot(slot).active);
      EXPECT_NE(slot, previous) << "call " << i << " on plane " << p;
      previous = slot;
    }
  }
}

TEST(EvSet, NextAvoidsTheGivenSlotWhenItCan) {
  EvSet evs(make_config(1, 4, 0), 3);
  for (int i = 0; i < 100; ++i) {
    const uint16_t avoid = static_cast<uint16_t>(i % 4);
    EXPECT_NE(evs.next(plane(0), avoid), avoid);
  }
  // With only one usable slot left, it is returned even if it is the one to avoid.
  EvSet one(make_config(1, 1, 0), 3);
  EXPECT_EQ(one.next(plane(0), 0), 0);
}

TEST(EvSet, RotationVisitsEveryUsableEvOncePerRotation) {
  EvSet evs(make_config(2, 16, 2), 11);
  for (int p = 0; p < 2; ++p) {
    const std::set<uint16_t> expected = active_slots(evs, plane(p));
    ASSERT_EQ(expected.size(), 8u);
    std::vector<std::vector<uint16_t>> rotations;
    for (int r = 0; r < 20; ++r) {
      std::map<uint16_t, int> seen;
      for (int i = 0; i < 8; ++i) ++seen[evs.next(plane(p))];
      ASSERT_EQ(seen.size(), 8u) << "rotation " << r << " on plane " << p;
      for (auto [slot, count] : seen) {
        EXPECT_EQ(count, 1);
        EXPECT_TRUE(expected.count(slot));
      }
    }
  }
  // The order is reshuffled between rotations.
  EvSet again(make_config(1, 8, 0), 11);
  std::set<std::vector<uint16_t>> orders;
  for (int r = 0; r < 20; ++r) {
    std::vector<uint16_t> order(8);
    for (uint16_t& slot : order) slot = again.next(plane(0));
    orders.insert(order);
  }
  EXPECT_GT(orders.size(), 10u);
}

TEST(EvSet, SkipIsPassedOverExactlyOnce) {
  EvSet evs(make_config(1, 8, 0), 5);
  const uint16_t skipped = evs.next(plane(0));
  // Finish this rotation so the next one starts fresh.
  for (int i = 0; i < 7; ++i) evs.next(plane(0));
  evs.on_ecn(skipped);
  EXPECT_EQ(evs.slot(skipped).state, EvState::kSkip);
  EXPECT_EQ(evs.transitions().to_skip, 1u);
  EXPECT_EQ(evs.usable_active(plane(0)), 8);  // SKIP still counts as usable
  // One rotation without it: the other seven, once each.
  std::set<uint16_t> first;
  for (int i = 0; i < 7; ++i) first.insert(evs.next(plane(0)));
  EXPECT_EQ(first.size(), 7u);
  EXPECT_FALSE(first.count(skipped));
  // Passed over once, it is GOOD again and back in every later rotation.
  int appearances = 0;
  for (int i = 0; i < 8 * 10; ++i) appearances += evs.next(plane(0)) == skipped;
  EXPECT_EQ(evs.slot(skipped).state, EvState::kGood);
  EXPECT_GE(appearances, 9);
  EXPECT_LE(appearances, 11);
  // A trim does the same.
  evs.on_trim(skipped);
  EXPECT_EQ(evs.slot(skipped).state, EvState::kSkip);
  EXPECT_EQ(evs.stats(skipped).trims, 1u);
}

TEST(EvSet, LossRetiresTheEvAndABackupOfTheSamePlaneReplacesIt) {
  EvSet evs(make_config(2, 8, 2), 9);
  const PlaneId p = plane(1);
  const std::set<uint16_t> before = active_slots(evs, p);
  const uint16_t lost = *before.begin();
  evs.on_loss(lost, Instant{1000});
  EXPECT_EQ(evs.slot(lost).state, EvState::kAssumedBad);
  EXPECT_FALSE(evs.slot(lost).active);
  EXPECT_EQ(evs.usable_active(p), 4);  // unchanged: a backup took its place
  EXPECT_EQ(evs.usable_active(plane(0)), 4);
  EXPECT_EQ(evs.transitions().to_assumed_bad, 1u);
  EXPECT_EQ(evs.transitions().replaced, 1u);
  const std::set<uint16_t> after = active_slots(evs, p);
  EXPECT_EQ(after.size(), 4u);
  for (uint16_t s : after) EXPECT_EQ(evs.slot(s).plane, p);
  // The retired EV is never handed out.
  for (int i = 0; i < 100; ++i) EXPECT_NE(evs.next(p), lost);
  // The second loss uses the last backup; the third has none left.
  evs.on_loss(*active_slots(evs, p).begin(), Instant{1000});
  EXPECT_EQ(evs.usable_active(p), 4);
  evs.on_loss(*active_slots(evs, p).begin(), Instant{1000});
  EXPECT_EQ(evs.usable_active(p), 3);
  EXPECT_EQ(evs.usable_active(plane(0)), 4);  // the other plane is untouched
  EXPECT_EQ(evs.transitions().replaced, 2u);
}

TEST(EvSet, MinActiveFloorHolds) {
  EvSet evs(make_config(1, 8, 0, 4), 13);
  for (uint16_t s = 0; s < 4; ++s) evs.on_loss(s, Instant{0});
  EXPECT_EQ(evs.usable_active(), 4);
  EXPECT_EQ(evs.transitions().to_assumed_bad, 4u);
  // Further losses only SKIP.
  for (uint16_t s = 4; s < 8; ++s) {
    evs.on_loss(s, Instant{0});
    EXPECT_EQ(evs.slot(s).state, EvState::kSkip);
  }
  EXPECT_EQ(evs.usable_active(), 4);
  EXPECT_EQ(evs.transitions().floor_held, 4u);
  EXPECT_EQ(evs.transitions().to_assumed_bad, 4u);
  EXPECT_NE(evs.next(plane(0)), EvSet::kNoSlot);
}

TEST(EvSet, ProbesReviveAnEvAfterEnoughAnswers) {
  EvSet evs(make_config(1, 4, 1), 17);
  const uint16_t bad = 0;
  const Instant t0{1'000'000};
  const Duration interval{50'000};
  evs.on_loss(bad, t0);
  ASSERT_EQ(evs.slot(bad).state, EvState::kAssumedBad);
  EXPECT_EQ(evs.probe_due(plane(0), t0), EvSet::kNoSlot);
  EXPECT_EQ(evs.probe_due(plane(0), t0 + Duration{49'999}), EvSet::kNoSlot);
  EXPECT_EQ(evs.next_probe_at(), t0 + interval);
  Instant now = t0 + interval;
  for (int answered = 1; answered <= 3; ++answered) {
    ASSERT_EQ(evs.probe_due(plane(0), now), bad) << "probe " << answered;
    evs.on_probe_sent(bad, now);
    EXPECT_EQ(evs.probe_due(plane(0), now), EvSet::kNoSlot);  // not due again until the interval
    if (answered < 3) {
      EXPECT_EQ(evs.slot(bad).state, EvState::kAssumedBad);
    }
    evs.on_probe_answered(bad);
    now = now + interval;
  }
  EXPECT_EQ(evs.slot(bad).state, EvState::kGood);
  EXPECT_EQ(evs.transitions().revived, 1u);
  EXPECT_TRUE(evs.next_probe_at().is_never());
  EXPECT_EQ(evs.probe_due(plane(0), now + Duration{1'000'000'000}), EvSet::kNoSlot);
  EXPECT_EQ(evs.stats(bad).probes_sent, 3u);
}

// Where the RTT is longer than the probe interval (deep queues, a busy host), a probe waits an
// RTT for its answer before the next goes out: otherwise every probe would count as unanswered.
TEST(EvSet, ProbesWaitAtLeastAnRtt) {
  EvSet evs(make_config(1, 4, 1), 23);
  const uint16_t bad = 1;
  const Instant t0{1'000'000};
  const Duration rtt{5'000'000};
  evs.on_loss(bad, t0);
  Instant now = evs.next_probe_at();
  ASSERT_EQ(evs.probe_due(plane(0), now), bad);
  evs.on_probe_sent(bad, now, rtt);
  EXPECT_EQ(evs.next_probe_at(), now + rtt);
  EXPECT_EQ(evs.probe_due(plane(0), now + Duration{4'999'999}), EvSet::kNoSlot);
  for (int answered = 1; answered <= 3; ++answered) {
    evs.on_probe_answered(bad);  // arrives an RTT later, before the next probe is due
    now = evs.next_probe_at();
    if (answered < 3) {
      ASSERT_EQ(evs.probe_due(plane(0), now), bad);
      evs.on_probe_sent(bad, now, rtt);
    }
  }
  EXPECT_EQ(evs.slot(bad).state, EvState::kGood);
  EXPECT_EQ(evs.slot(bad).failed_probes, 0);

  // A dead path backs off, but never beyond 4 RTTs when they are longer than 128 intervals.
  evs.on_loss(bad, now);
  for (int unanswered = 0; unanswered < 12; ++unanswered) {
    now = evs.next_probe_at();
    ASSERT_EQ(evs.probe_due(plane(0), now), bad);
    evs.on_probe_sent(bad, now, rtt);
  }
  EXPECT_EQ(evs.next_probe_at(), now + Duration{4 * rtt.ns});
}

// Many EVs retired at once (a software receiver that fell behind, a plane cut): the plane's
// probes together go out as one burst of at most one per EV of the plane, then one per probe
// interval, the most overdue EV first, so every retired EV is probed in turn. Unbounded, 40
// retired EVs each probed every 50 us over a 30 us loopback round trip sent ~100k probes a
// second each way, overflowed the receivers' socket buffers, lost the probes' answers and kept
// every EV retired.
TEST(EvSet, APlanesProbesTogetherAreRateLimited) {
  EvSetConfig config = make_config(2, 64, 8, 1);  // 40 slots per plane
  EvSet evs(config, 29);
  const Duration interval = config.probe_interval;
  const Duration rtt{30'000};
  const Instant t0{1'000'000};
  std::vector<uint16_t> retired;
  for (uint16_t i = 0; i < static_cast<uint16_t>(evs.size()); ++i)
    if (evs.slot(i).plane == plane(0)) retired.push_back(i);
  ASSERT_EQ(retired.size(), 40u);
  for (uint16_t i : retired) evs.on_loss(i, t0);  // the floor of 1 keeps one usable
  size_t bad = 0;
  for (uint16_t i : retired) bad += evs.slot(i).state == EvState::kAssumedBad ? 1 : 0;
  ASSERT_GE(bad, 39u);
  // Step 1 us at a time for 5 ms; nothing is ever answered (the answers are being lost).
  std::map<uint16_t, int> per_slot;
  std::vector<int64_t> sent_at_ns;
  for (Instant now = t0; now < t0 + Duration{5'000'000}; now = now + Duration{1'000}) {
    for (uint16_t due = evs.probe_due(plane(0), now); due != EvSet::kNoSlot;
         due = evs.probe_due(plane(0), now)) {
      evs.on_probe_sent(due, now, rtt);
      ++per_slot[due];
      sent_at_ns.push_back((now - t0).ns);
    }
  }
  // At most a burst of 40 plus one per interval over the 5 ms.
  const size_t limit = 40 + 5'000'000 / interval.ns;
  EXPECT_LE(sent_at_ns.size(), limit);
  EXPECT_GE(sent_at_ns.size(), limit - 2) << "the budget was not used";
  // Past the burst, consecutive probes are an interval apart.
  for (size_t i = 40; i < sent_at_ns.size(); ++i)
    EXPECT_GE(sent_at_ns[i] - sent_at_ns[i - 1], interval.ns) << "probe " << i;
  // Every retired EV was probed, and none more than twice as often as another.
  EXPECT_EQ(per_slot.size(), bad);
  int fewest = INT32_MAX, most = 0;
  for (const auto& [slot, n] : per_slot) {
    fewest = std::min(fewest, n);
    most = std::max(most, n);
  }
  EXPECT_LE(most, 2 * fewest + 1);
  // The other plane's budget is its own.
  const uint16_t other = *active_slots(evs, plane(1)).begin();
  evs.on_loss(other, t0 + Duration{5'000'000});
  EXPECT_EQ(evs.probe_due(plane(1), t0 + Duration{5'000'000} + interval), other);
}

TEST(EvSet, AnUnansweredProbeResetsTheCount) {
  EvSet evs(make_config(1, 4, 1), 19);
  const uint16_t bad = 2;
  Instant now{0};
  evs.on_loss(bad, now);
  auto probe = [&](bool answered) {
    // Due one interval after the last probe, doubled for each unanswered one before it.
    now = evs.next_probe_at();
    ASSERT_EQ(evs.probe_due(plane(0), now), bad);
    evs.on_probe_sent(bad, now);
    if (answered) evs.on_probe_answered(bad);
  };
  probe(true);
  probe(true);
  probe(false);  // the third goes unanswered: the count starts over when the next goes out
  EXPECT_EQ(evs.slot(bad).state, EvState::kAssumedBad);
  probe(true);
  EXPECT_EQ(evs.slot(bad).probe_successes, 1);
  probe(true);
  EXPECT_EQ(evs.slot(bad).state, EvState::kAssumedBad);
  probe(true);
  EXPECT_EQ(evs.slot(bad).state, EvState::kGood);
  // An answer that arrives with no probe outstanding (late or forged) counts for nothing.
  evs.on_loss(bad, now);
  ASSERT_EQ(evs.slot(bad).state, EvState::kAssumedBad);
  for (int i = 0; i < 5; ++i) evs.on_probe_answered(bad);
  EXPECT_EQ(evs.slot(bad).state, EvState::kAssumedBad);
  // A loss reported while being probed also starts the count over.
  probe(true);
  probe(true);
  evs.on_loss(bad, now);
  EXPECT_EQ(evs.slot(bad).probe_successes, 0);
}

TEST(EvSet, DeniedNeverReturnsOnItsOwnAndIsNotProbed) {
  EvSet evs(make_config(1, 4, 2), 23);
  const uint16_t denied = *active_slots(evs, plane(0)).begin();
  EXPECT_TRUE(evs.set_denied(denied, true));
  EXPECT_EQ(evs.slot(denied).state, EvState::kDenied);
  EXPECT_EQ(evs.usable_active(plane(0)), 4);  // replaced by a backup
  EXPECT_EQ(evs.transitions().to_denied, 1u);
  for (int i = 0; i < 1000; ++i) EXPECT_NE(evs.next(plane(0)), denied);
  EXPECT_EQ(evs.probe_due(plane(0), Instant{INT64_MAX / 2}), EvSet::kNoSlot);
  EXPECT_TRUE(evs.next_probe_at().is_never());
  // Nothing the network says changes it.
  evs.on_loss(denied, Instant{0});
  evs.on_probe_answered(denied);
  evs.on_ecn(denied);
  evs.on_trim(denied);
  EXPECT_EQ(evs.slot(denied).state, EvState::kDenied);
  // Only the controller brings it back.
  EXPECT_TRUE(evs.set_denied(denied, false));
  EXPECT_EQ(evs.slot(denied).state, EvState::kGood);
  EXPECT_FALSE(evs.set_denied(static_cast<uint16_t>(evs.size()), true));
}

TEST(EvSet, SlotOfMapsEchoedEvsBackAndRejectsForeignValues) {
  EvSet evs(make_config(4, 64, 4), 29);
  for (uint16_t i = 0; i < static_cast<uint16_t>(evs.size()); ++i)
    EXPECT_EQ(evs.slot_of(evs.slot(i).ev), i);
  const uint32_t slot_mask = (1u << EvSet::kSlotBits) - 1;
  for (uint16_t i = 0; i < static_cast<uint16_t>(evs.size()); ++i) {
    const uint32_t ev = evs.slot(i).ev.value;
    EXPECT_EQ(evs.slot_of(Ev(ev ^ (1u << EvSet::kSlotBits))), EvSet::kNoSlot);  // other high bits
    EXPECT_EQ(evs.slot_of(Ev(ev ^ 0x80000000u)), EvSet::kNoSlot);
  }
  EXPECT_EQ(evs.slot_of(Ev(static_cast<uint32_t>(evs.size()))),
            EvSet::kNoSlot);  // slot beyond the set
  EXPECT_EQ(evs.slot_of(Ev(slot_mask)), EvSet::kNoSlot);
  EXPECT_EQ(evs.slot_of(Ev(0xFFFFFFFFu)), EvSet::kNoSlot);
}

TEST(EvSet, ProbesBackOffWhileThePathStaysDead) {
  EvSet evs(make_config(1, 4, 1), 5);
  const uint16_t bad = 0;
  Instant now{0};
  evs.on_loss(bad, now);
  std::vector<int64_t> gaps;
  for (int i = 0; i < 12; ++i) {
    const Instant due = evs.next_probe_at();
    gaps.push_back((due - now).ns);
    now = due;
    ASSERT_EQ(evs.probe_due(plane(0), now), bad);
    evs.on_probe_sent(bad, now);  // never answered
  }
  // 50 us until more than kProbesBeforeBackoff probes failed, then doubling, capped at 128x.
  EXPECT_EQ(gaps[0], 50'000);
  EXPECT_EQ(gaps[4], 50'000);
  EXPECT_EQ(gaps[5], 100'000);
  EXPECT_EQ(gaps[6], 200'000);
  EXPECT_EQ(gaps[11], 50'000 * 128);
}

TEST(EvSet, RegeneratedEvIsNoLongerRecognised) {
  EvSetConfig config = make_config(1, 4, 1);
  config.regenerate_after_failed_probes = 2;
  EvSet evs(config, 31);
  const uint16_t bad = 1;
  const Ev original = evs.slot(bad).ev;
  Instant now{0};
  evs.on_loss(bad, now);
  for (int i = 0; i < 3; ++i) {  // three probes, none answered: two failures
    const Instant due = evs.next_probe_at();
    EXPECT_EQ(due - now, Duration{50'000});  // no backoff for the first few failures
    now = due;
    ASSERT_EQ(evs.probe_due(plane(0), now), bad);
    evs.on_probe_sent(bad, now);
  }
  EXPECT_EQ(evs.transitions().regenerated, 1u);
  EXPECT_NE(evs.slot(bad).ev, original);
  EXPECT_EQ(evs.slot_of(original), EvSet::kNoSlot);
  EXPECT_EQ(evs.slot_of(evs.slot(bad).ev), bad);
}

TEST(EvSet, PortModeGivesEachPlaneItsOwnStridedPortRange) {
  EvSetConfig c = make_config(4, 32, 2);
  c.port_base = 40000;
  c.port_stride = 80;  // the datapath binds 80 ports per plane; a plane uses 8 + 2 of them
  EvSet evs(c, 1);
  for (uint16_t i = 0; i < static_cast<uint16_t>(evs.size()); ++i) {
    const EvSet::Slot& s = evs.slot(i);
    const uint32_t first = 40000u + s.plane.value * 80u;
    EXPECT_GE(s.ev.value, first) << "slot " << i;
    EXPECT_LT(s.ev.value, first + 10) << "slot " << i;
    EXPECT_EQ(evs.slot_of(s.ev), i);
  }
  EXPECT_EQ(evs.slot_of(Ev(40000 + 10)), EvSet::kNoSlot);      // inside plane 0's range, unused
  EXPECT_EQ(evs.slot_of(Ev(40000 + 4 * 80)), EvSet::kNoSlot);  // past the last plane
  EXPECT_EQ(evs.slot_of(Ev(39999)), EvSet::kNoSlot);
}

// Two strikes: a first loss only SKIPs the EV (passed over once, then in rotation again); a
// second loss within loss_strike_uses uses of it retires it; a loss after more uses than that
// is a first strike again (random loss: no retirement, no probes).
EvSetConfig two_strikes() {
  EvSetConfig c = make_config(1, 8, 2);
  c.loss_strike_uses = 2;
  return c;
}

TEST(EvSet, ASecondLossSoonAfterTheFirstRetiresTheEv) {
  const EvSetConfig c = two_strikes();
  EvSet evs(c, 5);
  const uint16_t ev = *active_slots(evs, plane(0)).begin();
  evs.on_loss(ev, Instant{0});
  EXPECT_EQ(evs.slot(ev).state, EvState::kSkip);
  EXPECT_EQ(evs.transitions().to_assumed_bad, 0u);
  evs.on_loss(ev, Instant{0});  // a second packet on the same path, lost too (in flight)
  EXPECT_EQ(evs.slot(ev).state, EvState::kAssumedBad);

  EvSet random_loss(c, 5);
  const uint16_t other = *active_slots(random_loss, plane(0)).begin();
  random_loss.on_loss(other, Instant{0});
  size_t uses = 0;
  for (size_t i = 0; i < 64 && uses < 2; ++i) uses += random_loss.next(plane(0)) == other ? 1 : 0;
  ASSERT_EQ(uses, 2u);  // SKIPped once, then used twice: the strike has expired
  random_loss.on_loss(other, Instant{0});
  EXPECT_EQ(random_loss.slot(other).state, EvState::kSkip);
  EXPECT_EQ(random_loss.transitions().to_assumed_bad, 0u);
}

// A packet of a burst (next_in_burst, QpConfig::ev_burst_packets) is a use like one that next()
// hands out: a strike expires after the same number of packets whatever the burst length.
TEST(EvSet, BurstPacketsCountAsUsesOfTheStrike) {
  EvSet evs(two_strikes(), 5);
  const uint16_t ev = *active_slots(evs, plane(0)).begin();
  evs.on_loss(ev, Instant{0});
  size_t uses = 0;
  for (size_t i = 0; i < 64 && uses < 1; ++i) uses += evs.next(plane(0)) == ev ? 1 : 0;
  ASSERT_EQ(uses, 1u);        // SKIPped once, then handed out once: one use left
  EvSet::Burst burst{ev, 1};  // a burst of 2 whose first packet was that one
  ASSERT_EQ(evs.next_in_burst(plane(0), burst, 2), ev);  // its second: the second use
  evs.on_loss(ev, Instant{0});
  EXPECT_EQ(evs.slot(ev).state, EvState::kSkip);
  EXPECT_EQ(evs.transitions().to_assumed_bad, 0u);
}

// next_in_burst keeps k packets on one EV, then moves on as next() would; k = 1 is next().
TEST(EvSet, BurstsKeepKPacketsOnOneEvWhileItIsGood) {
  EvSet bursts(two_strikes(), 5);
  EvSet plain(two_strikes(), 5);
  EvSet::Burst one;
  for (int i = 0; i < 40; ++i)
    ASSERT_EQ(bursts.next_in_burst(plane(0), one, 1), plain.next(plane(0)));
  EvSet::Burst b;
  const uint16_t first = bursts.next_in_burst(plane(0), b, 3);
  EXPECT_EQ(bursts.next_in_burst(plane(0), b, 3), first);
  EXPECT_EQ(bursts.next_in_burst(plane(0), b, 3), first);
  EXPECT_NE(bursts.next_in_burst(plane(0), b, 3), first);  // the fourth starts the next burst
  const uint16_t second = b.slot;
  bursts.on_loss(second, Instant{0});  // no longer GOOD: the burst ends early
  EXPECT_NE(bursts.next_in_burst(plane(0), b, 3), second);
}

// A strike from a loss that proved to be reordering (revive) is forgotten: the next loss on the
// EV is a first strike again.
TEST(EvSet, RevivingForgetsTheStrike) {
  EvSet evs(two_strikes(), 5);
  const uint16_t ev = *active_slots(evs, plane(0)).begin();
  evs.on_loss(ev, Instant{0});
  evs.revive(ev);
  evs.on_loss(ev, Instant{0});
  EXPECT_EQ(evs.slot(ev).state, EvState::kSkip);
  EXPECT_EQ(evs.transitions().to_assumed_bad, 0u);
}

}  // namespace
}  // namespace mrc
