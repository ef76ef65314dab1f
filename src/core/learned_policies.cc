// Learned path policies (learned_policies.h): health, p2c and hedge.
#include "core/learned_policies.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/ev_set.h"

namespace mrc {

// ---- health ------------------------------------------------------------------------------

namespace {
int to_255(double weight) {
  return static_cast<int>(std::lround(std::clamp(weight, 0.0, 1.0) * 255));
}
}  // namespace

HealthPolicy::HealthPolicy(const HealthPolicyConfig& config, int planes, size_t slots,
                           uint64_t seed)
    : config_(config), risk_limit_(to_255(config.risk_limit)), prng_(seed), loss_(slots, 0) {
  if (risk_limit_ >= 255) return;  // prediction off
  risk_.assign(slots, 0);
  plane_min_rtt_ns_.assign(static_cast<size_t>(planes), INT64_MAX);
}

// The share moves toward 1 on a loss and toward 0 on a clean acknowledgement. Acknowledgements
// are coalesced (one echoed EV per SACK), so a share is not a loss rate per packet; but every EV
// is counted alike, so an EV's share against its plane's median is what tells a bad path from
// uniform loss. An arithmetic shift rounds down: a share decays all the way to 0.
void HealthPolicy::observe(uint16_t slot, bool lost) {
  const int share = loss_[slot];
  const int target = lost ? 255 : 0;
  loss_[slot] =
      static_cast<uint8_t>(std::clamp(share + ((target - share) >> config_.ev_shift), 0, 255));
}

void HealthPolicy::raise_risk(uint16_t slot, int by) {
  if (!risk_.empty()) risk_[slot] = static_cast<uint8_t>(std::min(255, risk_[slot] + by));
}

void HealthPolicy::on_clean_ack(uint16_t slot, PlaneId, Instant) {
  observe(slot, false);
  if (!risk_.empty())
    risk_[slot] = static_cast<uint8_t>(risk_[slot] - (risk_[slot] >> config_.risk_shift));
}

void HealthPolicy::on_mark(uint16_t slot, PlaneId) {
  if (!risk_.empty()) raise_risk(slot, static_cast<int>((255 - risk_[slot]) * config_.mark_risk));
}

void HealthPolicy::on_retired(uint16_t slot, PlaneId) {
  raise_risk(slot, to_255(config_.flap_risk));
}

// The plane's lowest RTT is the path without queueing; a sample far above it on one EV is a
// queue or a slow link on that EV's path.
void HealthPolicy::on_rtt(uint16_t slot, PlaneId plane, Duration rtt) {
  if (risk_.empty()) return;
  int64_t& low = plane_min_rtt_ns_[plane.value];
  low = std::min(low, rtt.ns);
  if (config_.rtt_inflation <= 0) return;
  if (static_cast<double>(rtt.ns) > config_.rtt_inflation * static_cast<double>(low))
    raise_risk(slot, (255 - risk_[slot]) >> 3);
}

double HealthPolicy::plane_median_share(const EvSet& evs, PlaneId plane) const {
  std::array<uint8_t, size_t{1} << EvSet::kSlotBits> shares;
  size_t n = 0;
  for (size_t i = 0; i < evs.size() && i < loss_.size(); ++i) {
    const EvSet::Slot& s = evs.slot(static_cast<uint16_t>(i));
    if (s.active && s.plane == plane) shares[n++] = loss_[i];
  }
  if (n == 0) return 0;
  std::nth_element(shares.begin(), shares.begin() + static_cast<std::ptrdiff_t>(n / 2),
                   shares.begin() + static_cast<std::ptrdiff_t>(n));
  return shares[n / 2] / 255.0;
}

PathPolicy::Verdict HealthPolicy::judge_loss(const EvSet& evs, uint16_t slot, PlaneId plane) {
  observe(slot, true);
  if (risky(slot)) return Verdict::kStrike;
  const double share = ev_loss_share(slot);
  const bool localised =
      share > config_.floor && share > config_.ratio * plane_median_share(evs, plane);
  return localised ? Verdict::kStrike : Verdict::kSkip;
}

// A risky candidate is passed over for one random GOOD EV of the plane with a lower risk, if
// the draw finds one; below the limit the rotation's choice stands and nothing is drawn.
uint16_t HealthPolicy::choose(const EvSet& evs, PlaneId plane, uint16_t candidate, uint16_t avoid) {
  if (candidate == EvSet::kNoSlot || !risky(candidate)) return candidate;
  const uint16_t other = draw_choosable(evs, plane, avoid, prng_);
  return other != EvSet::kNoSlot && risk_[other] < risk_[candidate] ? other : candidate;
}

// ---- p2c ---------------------------------------------------------------------------------

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
  if (candidate == EvSet::kNoSlot) return candidate;
  const uint16_t other = draw_choosable(evs, plane, avoid, prng_);
  return other != EvSet::kNoSlot && score_[other] < score_[candidate] ? other : candidate;
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

uint16_t HedgePolicy::choose(const EvSet& evs, PlaneId plane, uint16_t candidate, uint16_t avoid) {
  return credits_.pick(evs, plane, candidate, avoid, &HedgePolicy::weight_of, this);
}

}  // namespace mrc
