// Path policies (src/core/path_policy.h) inside the EV set: the rules are the default and carry
// no policy; the oblivious baseline holds no mark or detected loss against an EV but a timeout
// still retires; REPS reuses cleanly acknowledged EVs once each, never one the state machine
// took out of rotation, freezes on a timeout and explores after thawing; every policy keeps to
// the plane and to `avoid`, and fits the ship gate's 512 bytes per QP.
#include "core/path_policy.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/ev_set.h"
#include "core/learned_policies.h"
#include "core/path_watchdog.h"
#include "policy_config.h"
#include "util/prng.h"

namespace mrc {
namespace {

constexpr PlaneId kPlane0{0};
constexpr PlaneId kPlane1{1};

// A QP's default is the learned p2c policy (it passed the ship gate); an EV set built without
// one runs the rules alone, with no policy object.
TEST(PathPolicy, QpsDefaultToP2cAndTheRulesHaveNoPolicy) {
  EXPECT_EQ(EvSetConfig{}.path_policy, PathPolicyKind::kRules);
  EXPECT_EQ(QpConfig{}.path_policy, PathPolicyKind::kP2c);
  EvSet evs(policy_config(PathPolicyKind::kRules), 1);
  EXPECT_EQ(evs.policy(), nullptr);
}

TEST(PathPolicy, NamesParseBothWays) {
  for (PathPolicyKind k : {PathPolicyKind::kRules, PathPolicyKind::kOblivious,
                           PathPolicyKind::kReps, PathPolicyKind::kHealth}) {
    const auto parsed = parse_path_policy(to_string(k));
    ASSERT_TRUE(parsed.ok()) << to_string(k);
    EXPECT_EQ(parsed.value(), k);
  }
  EXPECT_FALSE(parse_path_policy("REPS").ok());
  const auto empty = parse_path_policy("");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("one of rules, oblivious"), std::string::npos)
      << empty.error().message;
}

TEST(PathPolicy, ObliviousHoldsMarksAndDetectedLossesAgainstNoEv) {
  EvSet evs(policy_config(PathPolicyKind::kOblivious), 1);
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
  EvSet evs(policy_config(PathPolicyKind::kOblivious), 1);
  const uint16_t s = evs.next(kPlane0);
  evs.on_loss(s, Instant{1000}, /*timeout=*/true);  // the first strike
  evs.on_loss(s, Instant{1000}, /*timeout=*/true);
  EXPECT_EQ(evs.slot(s).state, EvState::kAssumedBad);
  EXPECT_FALSE(evs.slot(s).active);  // replaced from the plane's backups
  EXPECT_EQ(evs.usable_active(kPlane0), 8);
}

TEST(PathPolicy, RepsReusesEachCleanlyAcknowledgedEvOnceOldestFirst) {
  EvSet evs(policy_config(PathPolicyKind::kReps), 7);
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
  EvSet evs(policy_config(PathPolicyKind::kReps), 3);
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
  EvSet evs(policy_config(PathPolicyKind::kReps), 5);
  const uint16_t a = evs.next(kPlane0);
  evs.on_clean_ack(a, Instant{10});
  EXPECT_NE(evs.next(kPlane0, a), a);
  EXPECT_EQ(evs.next(kPlane0), a);  // still fresh: kept for a packet that may take it
}

TEST(PathPolicy, RepsFreezesOnATimeoutAndExploresAfterThawing) {
  EvSet evs(policy_config(PathPolicyKind::kReps), 9);
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

// The ship gate's bound of 512 bytes per QP. The default QP (4 planes, 128 EVs, 8 backups per
// plane: 160 slots) fits every policy but health, whose failure prediction keeps two bytes per
// slot; the 64-host scenarios' QP (256 EVs: 288 slots) fits those whose state does not grow
// with the EVs and p2c (one byte per slot). The sizes are in BENCHMARKS.md.
size_t state_bytes(PathPolicyKind kind, int planes, size_t slots) {
  EvSetConfig c;
  c.planes = planes;
  c.path_policy = kind;
  return make_path_policy(c, slots, 1)->state_bytes();
}

TEST(PathPolicy, ThePoliciesWithinTheShipGatesMemoryBound) {
  for (PathPolicyKind k : {PathPolicyKind::kOblivious, PathPolicyKind::kReps, PathPolicyKind::kP2c,
                           PathPolicyKind::kHedge})
    EXPECT_LE(state_bytes(k, 4, 160), 512u) << to_string(k);
  for (PathPolicyKind k : {PathPolicyKind::kOblivious, PathPolicyKind::kReps, PathPolicyKind::kP2c})
    EXPECT_LE(state_bytes(k, 4, 288), 512u) << to_string(k);
  EXPECT_LE(state_bytes(PathPolicyKind::kReps, kMaxPlanes, 2048), 512u);
  EXPECT_GT(state_bytes(PathPolicyKind::kHealth, 4, 160), 512u);  // said so in BENCHMARKS.md
}

// Sends `packets` on one plane of 16 EVs; each packet's EV loses it with `loss` (`bad_loss` for
// the first EV sent on), else is acknowledged cleanly one time in four (coalesced SACKs).
// Returns the EV set for inspection and the first EV's slot.
struct LossRun {
  EvSet evs;
  uint16_t bad = EvSet::kNoSlot;
  int sent = 0;  // packets sent before the run ended (or every usable EV was gone)
};
LossRun run_losses(PathPolicyKind kind, double loss, double bad_loss, int packets, uint64_t seed) {
  EvSetConfig c = policy_config(kind, 1, 16);
  c.loss_strike_uses = 2;
  LossRun run{EvSet(c, seed)};
  Prng prng(seed);
  const auto draw = [&] { return static_cast<double>(prng.next_u64() >> 11) / (1ull << 53); };
  for (int i = 0; i < packets; ++i) {
    const uint16_t s = run.evs.next(kPlane0);
    if (s == EvSet::kNoSlot) break;  // nothing left to send on (no probes revive EVs here)
    if (run.bad == EvSet::kNoSlot) run.bad = s;
    ++run.sent;
    const Instant now{int64_t{i} * 1000};
    if (draw() < (s == run.bad ? bad_loss : loss))
      run.evs.on_loss(s, now);
    else if (i % 4 == 0)
      run.evs.on_clean_ack(s, now);
  }
  return run;
}

// Uniform loss (every EV alike): the rules retire EV after EV; the health policy, which judges
// an EV against its plane's median, retires far fewer per packet sent.
TEST(PathPolicy, HealthRetiresFarFewerEvsUnderUniformLoss) {
  double rules = 0, health = 0;  // retirements per 1000 packets, summed over seeds
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const LossRun r = run_losses(PathPolicyKind::kRules, 0.05, 0.05, 20000, seed);
    const LossRun h = run_losses(PathPolicyKind::kHealth, 0.05, 0.05, 20000, seed);
    rules += 1000.0 * static_cast<double>(r.evs.transitions().to_assumed_bad) / r.sent;
    health += 1000.0 * static_cast<double>(h.evs.transitions().to_assumed_bad) / h.sent;
  }
  EXPECT_GT(rules, 0);
  EXPECT_LT(health * 4, rules) << "retirements per 1000 packets: rules " << rules / 5 << ", health "
                               << health / 5;
}

// A bad path among healthy ones: its EV loses half its packets and is retired, as under the rules.
TEST(PathPolicy, HealthRetiresABadPath) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const LossRun run = run_losses(PathPolicyKind::kHealth, 0.01, 0.5, 2000, seed);
    EXPECT_EQ(run.evs.slot(run.bad).state, EvState::kAssumedBad) << "seed " << seed;
  }
}

TEST(PathPolicy, HealthStillRetiresOnTimeouts) {
  EvSet evs(policy_config(PathPolicyKind::kHealth), 1);
  const uint16_t s = evs.next(kPlane0);
  evs.on_loss(s, Instant{1000}, /*timeout=*/true);
  evs.on_loss(s, Instant{1000}, /*timeout=*/true);
  EXPECT_EQ(evs.slot(s).state, EvState::kAssumedBad);
}

// The weights ship as data (data/path_policy/health.json, written by bench/paths_train.py): the
// compiled-in defaults are those.
TEST(PathPolicy, HealthDefaultsAreTheShippedTrainedValues) {
  std::ifstream in(std::string(MRC_SOURCE_DIR) + "/data/path_policy/health.json");
  ASSERT_TRUE(in.good());
  const auto trained = nlohmann::json::parse(in);
  const HealthPolicyConfig defaults;
  EXPECT_EQ(trained.at("ev_shift").get<int>(), defaults.ev_shift);
  EXPECT_DOUBLE_EQ(trained.at("ratio").get<double>(), defaults.ratio);
  EXPECT_DOUBLE_EQ(trained.at("floor").get<double>(), defaults.floor);
  EXPECT_DOUBLE_EQ(trained.at("flap_risk").get<double>(), defaults.flap_risk);
  EXPECT_DOUBLE_EQ(trained.at("mark_risk").get<double>(), defaults.mark_risk);
  EXPECT_DOUBLE_EQ(trained.at("rtt_inflation").get<double>(), defaults.rtt_inflation);
  EXPECT_EQ(trained.at("risk_shift").get<int>(), defaults.risk_shift);
  EXPECT_DOUBLE_EQ(trained.at("risk_limit").get<double>(), defaults.risk_limit);
}

}  // namespace
}  // namespace mrc
