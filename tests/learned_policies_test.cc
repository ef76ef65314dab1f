// The learned path policies (src/core/learned_policies.h), the spray credits they and the
// oracle share (path_policy.h) and the watchdog (path_watchdog.h), inside the EV set: p2c
// steers packets away from an EV with marks and losses, hedge spreads them by weight and keeps
// every GOOD EV above its floor, both keep to the plane and to `avoid`; the watchdog runs the
// rules first, hands over to the policy, reverts for revert..2 x revert epochs when goodput
// falls, and recalibrates.
#include "core/learned_policies.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/ev_set.h"
#include "core/path_watchdog.h"
#include "policy_config.h"

namespace mrc {
namespace {

constexpr PlaneId kPlane0{0};
constexpr PlaneId kPlane1{1};

// Packets per slot over `n` packets of plane 0.
std::map<uint16_t, int> spread(EvSet& evs, int n, uint16_t avoid = EvSet::kNoSlot) {
  std::map<uint16_t, int> count;
  for (int i = 0; i < n; ++i) ++count[evs.next(kPlane0, avoid)];
  return count;
}

TEST(LearnedPolicies, P2cSteersAwayFromAnEvWithMarksAndLosses) {
  EvSet p2c(policy_config(PathPolicyKind::kP2c), 3);
  const uint16_t bad = p2c.next(kPlane0);
  for (int i = 0; i < 4; ++i) p2c.on_ecn(bad);  // a high score; the EV is GOOD again later
  auto* policy = dynamic_cast<const P2cPolicy*>(p2c.policy());
  ASSERT_NE(policy, nullptr);
  EXPECT_GT(policy->score(bad), 0);
  const auto with = spread(p2c, 800);
  // The rotation offers each of the plane's 8 EVs 100 times; the bad EV loses every comparison
  // with a clean one (7 in 8 of them), so it keeps about 12 of its packets.
  EXPECT_LT(with.count(bad) ? with.at(bad) : 0, 40);
  for (const auto& [slot, n] : with) EXPECT_EQ(p2c.slot(slot).plane, kPlane0);
}

TEST(LearnedPolicies, P2cScoresDecayWithCleanAcknowledgements) {
  P2cPolicy p({.shift = 2, .mark_weight = 0.5, .loss_weight = 1.0}, 8, 1);
  EvSet evs(policy_config(PathPolicyKind::kRules), 1);
  p.judge_loss(evs, 3, kPlane0);
  EXPECT_EQ(p.score(3), 255 >> 2);
  for (int i = 0; i < 40; ++i) p.on_clean_ack(3, kPlane0, Instant{0});
  EXPECT_EQ(p.score(3), 0);
  EXPECT_EQ(p.judge_loss(evs, 3, kPlane0), PathPolicy::Verdict::kStrike);  // the rules' verdict
}

TEST(LearnedPolicies, EveryPolicyKeepsToItsPlaneAndToAvoid) {
  for (PathPolicyKind k : {PathPolicyKind::kP2c, PathPolicyKind::kHedge}) {
    EvSet evs(policy_config(k), 5);
    const uint16_t avoid = evs.next(kPlane0);
    for (int i = 0; i < 8; ++i) evs.on_ecn(evs.next(kPlane0));  // scores and weights differ
    for (int i = 0; i < 400; ++i) {
      const uint16_t s = evs.next(i % 2 ? kPlane1 : kPlane0, avoid);
      ASSERT_NE(s, EvSet::kNoSlot);
      EXPECT_EQ(evs.slot(s).plane, i % 2 ? kPlane1 : kPlane0) << to_string(k);
      EXPECT_NE(s, avoid) << to_string(k);
      EXPECT_TRUE(evs.slot(s).active) << to_string(k);
    }
  }
}

TEST(LearnedPolicies, HedgeSpreadsByWeightAndKeepsTheFloor) {
  EvSetConfig c = policy_config(PathPolicyKind::kHedge, 1, 8);
  c.hedge = {.mark_penalty = 16, .loss_penalty = 64, .decay = 0, .floor = 1.0 / 64};
  EvSet evs(c, 2);
  const uint16_t half = evs.next(kPlane0);
  uint16_t gone = evs.next(kPlane0);
  evs.on_ecn(half);                                                // penalty 16: weight 1/2
  for (int i = 0; i < 4; ++i) evs.on_ecn(gone);                    // penalty 64: 1/16
  for (int i = 0; i < 4; ++i) evs.on_clean_ack(gone, Instant{0});  // decay 0: no change
  const auto* policy = dynamic_cast<const HedgePolicy*>(evs.policy());
  ASSERT_NE(policy, nullptr);
  EXPECT_DOUBLE_EQ(policy->weight(half), 0.5);
  EXPECT_DOUBLE_EQ(policy->weight(gone), 1.0 / 16);
  const auto n = spread(evs, 8000);
  // Weights 1 (6 EVs), 1/2 and 1/16: shares 1/7.5625 and so on, within a few packets.
  const double unit = 8000 / (6 + 0.5 + 1.0 / 16);
  EXPECT_NEAR(n.at(half), unit / 2, unit * 0.05);
  EXPECT_NEAR(n.at(gone), unit / 16, unit * 0.05);
  EXPECT_GT(n.at(gone), 0);  // the floor: never starved
}

TEST(LearnedPolicies, HedgeFloorHoldsUnderAnyPenalty) {
  HedgePolicy p({.mark_penalty = 255, .loss_penalty = 255, .decay = 1, .floor = 0.01}, 4);
  EvSet evs(policy_config(PathPolicyKind::kRules), 1);
  for (int i = 0; i < 10; ++i) p.judge_loss(evs, 1, kPlane0);
  EXPECT_DOUBLE_EQ(p.weight(1), 0.01);
  EXPECT_DOUBLE_EQ(p.weight(0), 1.0);
}

// Failure prediction: an EV the state machine retired before is risky; its next loss strikes at
// once even where the loss-locality rule alone would only SKIP, and the rotation's choice of it
// is traded for a lower-risk EV. Marks and inflated RTTs raise the risk too; clean
// acknowledgements let it decay. Off (risk_limit 1), nothing is kept.
TEST(LearnedPolicies, HealthPredictsFailureFromFlapsMarksAndRtts) {
  HealthPolicyConfig c;
  c.flap_risk = 0.8;
  c.mark_risk = 0.5;
  c.rtt_inflation = 2;
  c.risk_shift = 2;
  c.risk_limit = 0.5;
  EvSetConfig ec = policy_config(PathPolicyKind::kRules, 1, 8);
  EvSet evs(ec, 1);
  HealthPolicy h(c, 1, evs.size(), 7);
  // Uniform loss: every EV's share alike (two losses each), so a loss only SKIPs...
  for (uint16_t i = 0; i < 8; ++i) h.judge_loss(evs, i, kPlane0);
  for (uint16_t i = 2; i < 8; ++i) h.judge_loss(evs, i, kPlane0);
  EXPECT_EQ(h.judge_loss(evs, 1, kPlane0), PathPolicy::Verdict::kSkip);
  // ... unless EV 0 was retired before.
  h.on_retired(0, kPlane0);
  EXPECT_NEAR(h.risk(0), 0.8, 0.01);
  EXPECT_EQ(h.judge_loss(evs, 0, kPlane0), PathPolicy::Verdict::kStrike);
  // Clean acknowledgements bring it below the limit.
  for (int i = 0; i < 4; ++i) h.on_clean_ack(0, kPlane0, Instant{0});
  EXPECT_LT(h.risk(0), 0.5);
  h.on_mark(2, kPlane0);
  EXPECT_NEAR(h.risk(2), 0.5, 0.01);
  h.on_rtt(3, kPlane0, Duration{10'000});
  h.on_rtt(3, kPlane0, Duration{15'000});  // 1.5 x the lowest: not inflated
  EXPECT_EQ(h.risk(3), 0);
  h.on_rtt(3, kPlane0, Duration{30'000});  // 3 x
  EXPECT_GT(h.risk(3), 0);
}

TEST(LearnedPolicies, HealthPassesOverARiskyEvInRotation) {
  // Explicit EVs: no backups, so a retired EV keeps its place in the rotation.
  EvSetConfig c = policy_config(PathPolicyKind::kHealth, 1, 8);
  for (uint32_t e = 1; e <= 8; ++e) c.explicit_evs.push_back({kPlane0, Ev(e * 1000)});
  c.health.flap_risk = 1;
  c.health.risk_limit = 0.5;
  c.loss_strike_uses = 0;  // one strike retires
  EvSet evs(c, 4);
  const uint16_t bad = evs.next(kPlane0);
  evs.on_loss(bad, Instant{0}, /*timeout=*/true);  // retired; the policy notes it
  ASSERT_EQ(evs.slot(bad).state, EvState::kAssumedBad);
  evs.revive(bad);  // GOOD again (as after answered probes), still risky
  ASSERT_EQ(evs.slot(bad).state, EvState::kGood);
  const auto n = spread(evs, 800);
  // Offered about 100 times, it keeps only the draws that land on itself (1 in 8).
  EXPECT_LT(n.count(bad) ? n.at(bad) : 0, 40);
}

TEST(LearnedPolicies, HealthKeepsNoRiskWithoutPrediction) {
  HealthPolicyConfig off;
  off.risk_limit = 1;
  HealthPolicy h(off, 4, 288, 1);
  h.on_retired(0, kPlane0);
  EXPECT_EQ(h.risk(0), 0);
  EXPECT_LE(h.state_bytes(), 512u);  // one byte per slot
}

// The shipped weights (data/path_policy/*.json, from bench/paths_train.py) are the defaults.
TEST(LearnedPolicies, DefaultsAreTheShippedTrainedValues) {
  const auto load = [](const char* name) {
    std::ifstream in(std::string(MRC_SOURCE_DIR) + "/data/path_policy/" + name);
    EXPECT_TRUE(in.good()) << name;
    return nlohmann::json::parse(in);
  };
  const auto p2c = load("p2c.json");
  const P2cPolicyConfig p;
  EXPECT_EQ(p2c.at("shift").get<int>(), p.shift);
  EXPECT_DOUBLE_EQ(p2c.at("mark_weight").get<double>(), p.mark_weight);
  EXPECT_DOUBLE_EQ(p2c.at("loss_weight").get<double>(), p.loss_weight);
  const auto hedge = load("hedge.json");
  const HedgePolicyConfig h;
  EXPECT_DOUBLE_EQ(hedge.at("mark_penalty").get<double>(), h.mark_penalty);
  EXPECT_DOUBLE_EQ(hedge.at("loss_penalty").get<double>(), h.loss_penalty);
  EXPECT_DOUBLE_EQ(hedge.at("decay").get<double>(), h.decay);
  EXPECT_DOUBLE_EQ(hedge.at("floor").get<double>(), h.floor);
}

// ---- watchdog ----------------------------------------------------------------------------

// A policy that always offers slot 7 and never strikes, so whether the watchdog lets it act
// shows in every answer.
class Marker final : public PathPolicy {
 public:
  uint16_t choose(const EvSet&, PlaneId, uint16_t, uint16_t) override { return 7; }
  Verdict judge_loss(const EvSet&, uint16_t, PlaneId) override {
    ++judged;
    return Verdict::kIgnore;
  }
  bool skips_on_marks() const override { return false; }
  size_t state_bytes() const override { return 0; }
  int judged = 0;
};

struct Dog {
  PathWatchdogConfig config{.enabled = true,
                            .epoch_rtts = 1,
                            .min_epoch_ns = 1000,
                            .fall = 0.2,
                            .bad_epochs = 2,
                            .revert_epochs = 4,
                            .recalibrate_every = 100};
  EvSet evs{config_for_test(), 1};
  Marker* marker = nullptr;
  std::unique_ptr<PathWatchdog> dog;
  int64_t now_ns = 0;
  static EvSetConfig config_for_test() { return EvSetConfig{}; }
  explicit Dog(uint16_t recalibrate = 100, uint64_t seed = 1) {
    config.recalibrate_every = recalibrate;
    auto m = std::make_unique<Marker>();
    marker = m.get();
    dog = std::make_unique<PathWatchdog>(config, std::move(m), seed);
  }
  // One epoch (1 us) at `bytes_per_us`, acknowledged in 4 steps.
  void epoch(uint64_t bytes_per_us) {
    for (int i = 0; i < 4; ++i) {
      now_ns += 250;
      dog->on_delivered(bytes_per_us / 4, Instant{now_ns}, Duration{100});
    }
  }
  bool policy_acts() { return dog->choose(evs, kPlane0, 3, EvSet::kNoSlot) == 7; }
};

TEST(PathWatchdog, TheRulesRunTheFirstEpochThenThePolicy) {
  Dog d;
  d.dog->on_delivered(0, Instant{0}, Duration{100});  // the first acknowledgement starts it
  EXPECT_FALSE(d.policy_acts());
  EXPECT_TRUE(d.dog->skips_on_marks());  // the rules' answers while the rules run
  EXPECT_EQ(d.dog->judge_loss(d.evs, 1, kPlane0), PathPolicy::Verdict::kStrike);
  EXPECT_EQ(d.marker->judged, 1);  // ... but the policy still observed the loss
  d.epoch(1000);
  EXPECT_TRUE(d.policy_acts());
  EXPECT_FALSE(d.dog->skips_on_marks());
  EXPECT_EQ(d.dog->judge_loss(d.evs, 1, kPlane0), PathPolicy::Verdict::kIgnore);
}

TEST(PathWatchdog, RevertsForRevertToTwiceRevertEpochsWhenGoodputFalls) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    Dog d(100, seed);
    d.dog->on_delivered(0, Instant{0}, Duration{100});
    d.epoch(1000);  // the baseline
    d.epoch(900);   // 10 % below: not bad
    d.epoch(700);   // 30 % below: one bad epoch
    EXPECT_TRUE(d.policy_acts());
    d.epoch(700);  // the second in a row: revert
    EXPECT_FALSE(d.policy_acts());
    EXPECT_EQ(d.dog->reverts(), 1u);
    int rules_epochs = 1;  // counting until the policy is back
    while (!d.policy_acts() && rules_epochs < 100) {
      d.epoch(700);
      ++rules_epochs;
    }
    EXPECT_GE(rules_epochs, 4) << "seed " << seed;
    EXPECT_LE(rules_epochs, 9) << "seed " << seed;  // 4..8 epochs, the last the new baseline
    d.epoch(700);                                   // the new baseline is 700: no longer bad
    d.epoch(700);
    EXPECT_TRUE(d.policy_acts());
  }
}

TEST(PathWatchdog, RecalibratesWithOneRulesEpoch) {
  Dog d(3);
  d.dog->on_delivered(0, Instant{0}, Duration{100});
  d.epoch(1000);
  d.epoch(1000);
  d.epoch(1000);
  EXPECT_TRUE(d.policy_acts());
  d.epoch(1000);  // the third policy epoch: the rules run the next one
  EXPECT_FALSE(d.policy_acts());
  d.epoch(1000);
  EXPECT_TRUE(d.policy_acts());
  EXPECT_EQ(d.dog->reverts(), 0u);
}

TEST(PathWatchdog, EpochsLastAtLeastTheConfiguredRtts) {
  Dog d;
  d.config.epoch_rtts = 10;
  d.dog = std::make_unique<PathWatchdog>(d.config, std::make_unique<Marker>(), 1);
  d.dog->on_delivered(0, Instant{0}, Duration{1000});
  d.dog->on_delivered(100, Instant{5'000}, Duration{1000});  // half of 10 RTTs: still the rules
  EXPECT_FALSE(d.policy_acts());
  d.dog->on_delivered(100, Instant{10'000}, Duration{1000});
  EXPECT_TRUE(d.policy_acts());
}

}  // namespace
}  // namespace mrc
