// Path policies (src/core/path_policy.h) inside the EV set: the rules are the default and carry
// no policy; the oblivious baseline holds no mark or detected loss against an EV but a timeout
// still retires; REPS reuses cleanly acknowledged EVs once each, never one the state machine
// took out of rotation, freezes on a timeout and explores after thawing; every policy keeps to
// the plane and to `avoid`, and fits the ship gate's 512 bytes per QP.
#include "core/path_policy.h"

#include <gtest/gtest.h>

#include <set>

#include "core/ev_set.h"

namespace mrc {
namespace {

EvSetConfig config(PathPolicyKind kind, int planes = 2, uint16_t active = 16) {
  EvSetConfig c;
  c.planes = planes;
  c.active_count = active;
  c.backup_per_plane = 4;
  c.min_active = 1;
  c.path_policy = kind;
  return c;
}

constexpr PlaneId kPlane0{0};
constexpr PlaneId kPlane1{1};

TEST(PathPolicy, TheRulesAreTheDefaultAndHaveNoPolicy) {
  EXPECT_EQ(EvSetConfig{}.path_policy, PathPolicyKind::kRules);
  EXPECT_EQ(QpConfig{}.path_policy, PathPolicyKind::kRules);
  EvSet evs(config(PathPolicyKind::kRules), 1);
  EXPECT_EQ(evs.policy(), nullptr);
}

TEST(PathPolicy, NamesParseBothWays) {
  for (PathPolicyKind k : {PathPolicyKind::kRules, PathPolicyKind::kOblivious, PathPolicyKind::kReps}) {
    PathPolicyKind parsed = PathPolicyKind::kRules;
    ASSERT_TRUE(parse_path_policy(to_string(k), parsed)) << to_string(k);
    EXPECT_EQ(parsed, k);
  }
  PathPolicyKind out = PathPolicyKind::kReps;
  EXPECT_FALSE(parse_path_policy("REPS", out));
  EXPECT_FALSE(parse_path_policy("", out));
  EXPECT_EQ(out, PathPolicyKind::kReps);
}

TEST(PathPolicy, ObliviousHoldsMarksAndDetectedLossesAgainstNoEv) {
  EvSet evs(config(PathPolicyKind::kOblivious), 1);
  const uint16_t s = evs.next(kPlane0);
  evs.on_ecn(s);
  evs.on_trim(s);
  for (int i = 0; i < 5; ++i) evs.on_loss(s, Instant{1000});
  EXPECT_EQ(evs.slot(s).state, EvState::kGood);
  EXPECT_EQ(evs.stats(s).losses, 5u);  // counted all the same
  EXPECT_EQ(evs.stats(s).ecn_marks, 1u);
  EXPECT_EQ(evs.transitions().to_assumed_bad, 0u);
}

TEST(PathPolicy, ObliviousStillRetiresAnEvOnTimeouts) {
  EvSet evs(config(PathPolicyKind::kOblivious), 1);
  const uint16_t s = evs.next(kPlane0);
  evs.on_loss(s, Instant{1000}, /*timeout=*/true);  // the first strike
  evs.on_loss(s, Instant{1000}, /*timeout=*/true);
  EXPECT_EQ(evs.slot(s).state, EvState::kAssumedBad);
  EXPECT_FALSE(evs.slot(s).active);  // replaced from the plane's backups
  EXPECT_EQ(evs.usable_active(kPlane0), 8);
}

TEST(PathPolicy, RepsReusesEachCleanlyAcknowledgedEvOnceOldestFirst) {
  EvSet evs(config(PathPolicyKind::kReps), 7);
  const uint16_t a = evs.next(kPlane0), b = evs.next(kPlane0);
  evs.on_clean_ack(b, Instant{10});
  evs.on_clean_ack(a, Instant{11});
  EXPECT_EQ(evs.next(kPlane0), b);
  EXPECT_EQ(evs.next(kPlane0), a);
  // Used up: the next comes from the rotation, on the plane.
  const uint16_t c = evs.next(kPlane0);
  EXPECT_EQ(evs.slot(c).plane, kPlane0);
  // Another plane's ring is its own.
  const uint16_t d = evs.next(kPlane1);
  evs.on_clean_ack(d, Instant{12});
  EXPECT_NE(evs.next(kPlane0), d);
  EXPECT_EQ(evs.next(kPlane1), d);
}

TEST(PathPolicy, RepsNeverReusesAnEvTheStateMachineTookOut) {
  EvSet evs(config(PathPolicyKind::kReps), 3);
  const uint16_t marked = evs.next(kPlane0), retired = evs.next(kPlane0);
  evs.on_clean_ack(marked, Instant{10});
  evs.on_clean_ack(retired, Instant{10});
  evs.on_ecn(marked);  // SKIP
  evs.on_loss(retired, Instant{20}, true);
  evs.on_loss(retired, Instant{20}, true);  // ASSUMED_BAD
  ASSERT_EQ(evs.slot(retired).state, EvState::kAssumedBad);
  for (int i = 0; i < 8; ++i) {
    const uint16_t s = evs.next(kPlane0);
    EXPECT_NE(s, retired);
    EXPECT_TRUE(evs.slot(s).state == EvState::kGood && evs.slot(s).active);
  }
}

TEST(PathPolicy, RepsKeepsToAvoid) {
  EvSet evs(config(PathPolicyKind::kReps), 5);
  const uint16_t a = evs.next(kPlane0);
  evs.on_clean_ack(a, Instant{10});
  EXPECT_NE(evs.next(kPlane0, a), a);
  EXPECT_EQ(evs.next(kPlane0), a);  // still fresh: kept for a packet that may take it
}

TEST(PathPolicy, RepsFreezesOnATimeoutAndExploresAfterThawing) {
  EvSet evs(config(PathPolicyKind::kReps), 9);
  const auto* reps = static_cast<const RepsPolicy*>(evs.policy());
  const uint16_t a = evs.next(kPlane0), b = evs.next(kPlane0);
  evs.on_clean_ack(a, Instant{10});
  evs.on_clean_ack(b, Instant{11});
  evs.on_timeout(Instant{1'000}, Duration{20'000});  // freezes for max(8 RTT, 100 us) = 160 us
  ASSERT_TRUE(reps->frozen());
  std::multiset<uint16_t> used;
  for (int i = 0; i < 10; ++i) used.insert(evs.next(kPlane0));
  EXPECT_EQ(used.count(a) + used.count(b), 10u);  // reused round and round, not used up
  EXPECT_GE(used.count(a), 4u);
  evs.on_clean_ack(a, Instant{100'000});  // before the thaw: still frozen
  EXPECT_TRUE(reps->frozen());
  evs.on_clean_ack(b, Instant{161'000});
  EXPECT_FALSE(reps->frozen());
  // The ring was emptied (b's acknowledgement is its only entry) and exploring comes first.
  std::set<uint16_t> explored;
  for (uint16_t i = 0; i < RepsPolicy::kExploreAfterFreeze; ++i) explored.insert(evs.next(kPlane0));
  EXPECT_GT(explored.size(), 4u);
  EXPECT_EQ(evs.next(kPlane0), b);
}

TEST(PathPolicy, EveryPolicyFitsTheShipGatesMemoryBound) {
  for (PathPolicyKind k : {PathPolicyKind::kOblivious, PathPolicyKind::kReps}) {
    const auto policy = make_path_policy(k, kMaxPlanes);
    ASSERT_NE(policy, nullptr);
    EXPECT_LE(policy->state_bytes(), 512u) << to_string(k);
  }
}

}  // namespace
}  // namespace mrc
