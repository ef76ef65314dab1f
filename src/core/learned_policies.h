// Learned path policies: parameterised rules whose parameters were searched on simulator
// scenarios (bench/paths_train.py) and ship as data (data/path_policy/*.json, which the
// compiled-in defaults equal). Each works inside the EV set's state machine like every policy
// (path_policy.h).
//
//   health  a loss-locality classifier on the feedback path (the brief's C3, reduced to its loss
//           judgement): each EV keeps the share of its feedback (clean acknowledgements and
//           losses) that was a loss. A loss strikes the EV only if its share is above `ratio`
//           times the median share of the plane's EVs in rotation and above `floor`; otherwise
//           it only SKIPs the EV: uniform loss (every EV alike: a lossy NIC, a noisy fabric)
//           then retires no EV, yet a lost packet still steers the next ones elsewhere for a
//           rotation as under the rules (a loss is also a congestion signal), while a bad path
//           (its EVs far above the rest) is struck as under the rules. The median, not the
//           mean, so that a minority of bad EVs (a blackhole, a gray link) does not raise the
//           bar for itself. It also predicts failures: each EV's risk rises when the state
//           machine retires it (a flapping path fails again), on ECN marks and on inflated RTTs,
//           and decays on clean acknowledgements; an EV above the risk limit is struck on its
//           first loss and passed over for a random lower-risk GOOD EV of its plane, before it
//           loses anything. Nothing per packet below the limit; a median per loss.
//   p2c     a learned-score power-of-two choice (the brief's C1): each EV keeps a score, an
//           EWMA of its feedback (clean acknowledgement 0, ECN mark or trim `mark_weight`, loss
//           `loss_weight`); each packet compares the rotation's EV with one other GOOD EV of
//           the plane drawn at random and takes the lower score. The rotation still decides
//           what is GOOD; the score only steers between usable EVs, so a path that marks or
//           loses more carries less before any state changes. Losses strike as under the rules.
//   hedge   multiplicative weights (the brief's C2, Hedge): each EV's penalty grows by
//           `mark_penalty` on a mark and `loss_penalty` on a loss and decays by `decay` on a
//           clean acknowledgement; its weight is 2^(-penalty/16), never below `floor`, so every
//           GOOD EV keeps some traffic (the exploration floor). The weights spread the plane's
//           packets through SprayCredits (smooth weighted round robin) instead of a compiled
//           table: the same shares, no rebuild. Losses strike as under the rules.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/path_policy.h"
#include "util/prng.h"

namespace mrc {

class HealthPolicy final : public PathPolicy {
 public:
  HealthPolicy(const HealthPolicyConfig& config, int planes, size_t slots, uint64_t seed);
  uint16_t choose(const EvSet& evs, PlaneId plane, uint16_t candidate, uint16_t avoid) override;
  Verdict judge_loss(const EvSet& evs, uint16_t slot, PlaneId plane) override;
  void on_clean_ack(uint16_t slot, PlaneId, Instant) override;
  void on_mark(uint16_t slot, PlaneId) override;
  void on_rtt(uint16_t slot, PlaneId plane, Duration rtt) override;
  void on_retired(uint16_t slot, PlaneId) override;
  size_t state_bytes() const override {
    return sizeof(*this) + loss_.size() + risk_.size() + plane_min_rtt_ns_.size() * sizeof(int64_t);
  }
  // The EV's loss share, and the median of the plane's EVs in rotation, in [0, 1].
  double ev_loss_share(uint16_t slot) const { return loss_[slot] / 255.0; }
  double plane_median_share(const EvSet& evs, PlaneId plane) const;
  // The EV's predicted risk of failing, in [0, 1].
  double risk(uint16_t slot) const { return risk_.empty() ? 0 : risk_[slot] / 255.0; }

 private:
  void observe(uint16_t slot, bool lost);
  void raise_risk(uint16_t slot, int by);
  bool risky(uint16_t slot) const { return !risk_.empty() && risk_[slot] > risk_limit_; }

  HealthPolicyConfig config_;
  int risk_limit_;  // in 1/255
  Prng prng_;
  std::vector<uint8_t> loss_;  // per slot, the loss share in 1/255
  // Per slot, the risk in 1/255; empty (nothing kept) when prediction is off (risk_limit 1).
  std::vector<uint8_t> risk_;
  std::vector<int64_t> plane_min_rtt_ns_;  // the lowest RTT sampled per plane (prediction on)
};

class P2cPolicy final : public PathPolicy {
 public:
  P2cPolicy(const P2cPolicyConfig& config, size_t slots, uint64_t seed);
  uint16_t choose(const EvSet& evs, PlaneId plane, uint16_t candidate, uint16_t avoid) override;
  Verdict judge_loss(const EvSet&, uint16_t slot, PlaneId) override {
    observe(slot, loss_target_);
    return Verdict::kStrike;
  }
  void on_clean_ack(uint16_t slot, PlaneId, Instant) override { observe(slot, 0); }
  void on_mark(uint16_t slot, PlaneId) override { observe(slot, mark_target_); }
  size_t state_bytes() const override { return sizeof(*this) + score_.size(); }
  uint8_t score(uint16_t slot) const { return score_[slot]; }

 private:
  void observe(uint16_t slot, int target);

  uint8_t shift_;
  int mark_target_;  // the feedback weights, in 1/255
  int loss_target_;
  Prng prng_;
  std::vector<uint8_t> score_;  // per slot, in 1/255
};

class HedgePolicy final : public PathPolicy {
 public:
  HedgePolicy(const HedgePolicyConfig& config, size_t slots);
  uint16_t choose(const EvSet& evs, PlaneId plane, uint16_t candidate, uint16_t avoid) override;
  Verdict judge_loss(const EvSet&, uint16_t slot, PlaneId) override {
    penalise(slot, loss_penalty_);
    return Verdict::kStrike;
  }
  void on_clean_ack(uint16_t slot, PlaneId, Instant) override { penalise(slot, -decay_); }
  void on_mark(uint16_t slot, PlaneId) override { penalise(slot, mark_penalty_); }
  size_t state_bytes() const override {
    return sizeof(*this) + penalty_.size() + credits_.state_bytes();
  }
  double weight(uint16_t slot) const { return std::max(floor_, weights_[penalty_[slot]]); }

 private:
  void penalise(uint16_t slot, int by);
  static double weight_of(const void* self, uint16_t slot) {
    return static_cast<const HedgePolicy*>(self)->weight(slot);
  }

  int mark_penalty_;
  int loss_penalty_;
  int decay_;
  double floor_;
  const double* weights_;         // per penalty 0..255: 2^(-penalty/16), shared by every QP
  std::vector<uint8_t> penalty_;  // per slot
  SprayCredits credits_;
};

}  // namespace mrc
