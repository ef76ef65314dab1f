// Learned path policies (learned_policies.h): health, p2c and hedge.
#include "core/learned_policies.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/ev_set.h"

namespace mrc {

// ---- health ------------------------------------------------------------------------------

// The share moves toward 1 on a loss and toward 0 on a clean acknowledgement. Acknowledgements
// are coalesced (one echoed EV per SACK), so a share is not a loss rate per packet; but every EV
// is counted alike, so an EV's share against its plane's median is what tells a bad path from
// uniform loss. An arithmetic shift rounds down: a share decays all the way to 0.
void HealthPolicy::observe(uint16_t slot, bool lost) {
  const int share = ev_loss_[slot];
  const int target = lost ? 255 : 0;
  ev_loss_[slot] =
      static_cast<uint8_t>(std::clamp(share + ((target - share) >> config_.ev_shift), 0, 255));
}

double HealthPolicy::plane_median_share(const EvSet& evs, PlaneId plane) const {
  std::array<uint8_t, size_t{1} << EvSet::kSlotBits> shares;
  size_t n = 0;
  for (size_t i = 0; i < evs.size() && i < ev_loss_.size(); ++i) {
    const EvSet::Slot& s = evs.slot(static_cast<uint16_t>(i));
    if (s.active && s.plane == plane) shares[n++] = ev_loss_[i];
  }
  if (n == 0) return 0;
  std::nth_element(shares.begin(), shares.begin() + static_cast<std::ptrdiff_t>(n / 2),
                   shares.begin() + static_cast<std::ptrdiff_t>(n));
  return shares[n / 2] / 255.0;
}

PathPolicy::Verdict HealthPolicy::judge_loss(const EvSet& evs, uint16_t slot, PlaneId plane) {
  observe(slot, true);
  const double share = ev_loss_share(slot);
  const bool localised =
      share > config_.floor && share > config_.ratio * plane_median_share(evs, plane);
  return localised ? Verdict::kStrike : Verdict::kSkip;
}

// ---- p2c ---------------------------------------------------------------------------------

namespace {
int to_255(double weight) { return static_cast<int>(std::lround(std::clamp(weight, 0.0, 1.0) * 255)); }
}  // namespace

P2cPolicy::P2cPolicy(const P2cPolicyConfig& config, size_t slots, uint64_t seed)
    : shift_(config.shift),
      mark_target_(to_255(config.mark_weight)),
      loss_target_(to_255(config.loss_weight)),
      prng_(seed),
      score_(slots, 0) {}

// An arithmetic shift rounds down, so a score decays all the way to 0.
void P2cPolicy::observe(uint16_t slot, int target) {
  const int score = score_[slot];
  const int step = (target - score) >> shift_;
  score_[slot] = static_cast<uint8_t>(std::clamp(score + step, 0, 255));
}

uint16_t P2cPolicy::choose(const EvSet& evs, PlaneId plane, uint16_t candidate, uint16_t avoid) {
  const std::span<const uint16_t> order = evs.rotation_slots(plane);
  if (candidate == EvSet::kNoSlot || order.empty()) return candidate;
  const uint16_t other = order[prng_.below(order.size())];
  if (other == candidate || !evs.choosable(other, plane, avoid)) return candidate;
  return score_[other] < score_[candidate] ? other : candidate;
}

// ---- hedge -------------------------------------------------------------------------------

namespace {
// 2^(-penalty/16) for every penalty, built once (a function-local static is thread-safe).
const std::array<double, 256>& decay_table() {
  static const std::array<double, 256> table = [] {
    std::array<double, 256> t{};
    for (int p = 0; p < 256; ++p) t[static_cast<size_t>(p)] = std::exp2(-p / 16.0);
    return t;
  }();
  return table;
}
}  // namespace

HedgePolicy::HedgePolicy(const HedgePolicyConfig& config, size_t slots)
    : mark_penalty_(static_cast<int>(std::lround(config.mark_penalty))),
      loss_penalty_(static_cast<int>(std::lround(config.loss_penalty))),
      decay_(static_cast<int>(std::lround(config.decay))),
      floor_(config.floor),
      weights_(decay_table().data()),
      penalty_(slots, 0),
      credits_(slots) {}

void HedgePolicy::penalise(uint16_t slot, int by) {
  penalty_[slot] = static_cast<uint8_t>(std::clamp(penalty_[slot] + by, 0, 255));
}

uint16_t HedgePolicy::choose(const EvSet& evs, PlaneId plane, uint16_t candidate,
                             uint16_t avoid) {
  return credits_.pick(evs, plane, candidate, avoid, &HedgePolicy::weight_of, this);
}

}  // namespace mrc
