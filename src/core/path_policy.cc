// Path policies (path_policy.h): the baselines behind the EV set's policy seam.
#include "core/path_policy.h"

#include <algorithm>

#include "core/ev_set.h"

namespace mrc {

std::unique_ptr<PathPolicy> make_path_policy(PathPolicyKind kind, const HealthPolicyConfig& health,
                                             int planes, size_t slots) {
  switch (kind) {
    case PathPolicyKind::kRules:
      return nullptr;
    case PathPolicyKind::kOblivious:
      return std::make_unique<ObliviousPolicy>();
    case PathPolicyKind::kReps:
      return std::make_unique<RepsPolicy>(planes);
    case PathPolicyKind::kHealth:
      return std::make_unique<HealthPolicy>(health, slots);
  }
  return nullptr;
}

uint16_t RepsPolicy::choose(const EvSet& evs, PlaneId plane, uint16_t candidate, uint16_t avoid) {
  if (explore_left_ > 0) {
    --explore_left_;
    return candidate;
  }
  Ring& ring = rings_[plane.value];
  const uint16_t reused =
      frozen_ ? reuse_frozen(evs, ring, plane, avoid) : reuse_fresh(evs, ring, plane, avoid);
  return reused != EvSet::kNoSlot ? reused : candidate;
}

// The oldest fresh entry whose EV may still carry the plane's packet, used up; entries whose
// EV may not (retired, replaced, SKIPped since) are dropped on the way.
uint16_t RepsPolicy::reuse_fresh(const EvSet& evs, Ring& ring, PlaneId plane, uint16_t avoid) {
  for (uint32_t k = 0; k < kRingEntries && ring.fresh != 0; ++k) {
    const uint32_t i = (ring.head + k) % kRingEntries;  // oldest first
    const uint8_t bit = static_cast<uint8_t>(1u << i);
    if ((ring.fresh & bit) == 0) continue;
    const uint16_t slot = ring.slots[i];
    if (slot == avoid) continue;  // kept for the next packet
    ring.fresh = static_cast<uint8_t>(ring.fresh & ~bit);
    if (evs.choosable(slot, plane, avoid)) return slot;
  }
  return EvSet::kNoSlot;
}

// During a freeze: the ring's EVs in turn, none used up.
uint16_t RepsPolicy::reuse_frozen(const EvSet& evs, Ring& ring, PlaneId plane, uint16_t avoid) {
  for (uint32_t k = 0; k < kRingEntries; ++k) {
    const uint32_t i = ring.cursor;
    ring.cursor = static_cast<uint8_t>((ring.cursor + 1) % kRingEntries);
    if ((ring.filled & (1u << i)) != 0 && evs.choosable(ring.slots[i], plane, avoid))
      return ring.slots[i];
  }
  return EvSet::kNoSlot;
}

void RepsPolicy::on_clean_ack(uint16_t slot, PlaneId plane, Instant now) {
  if (frozen_ && now >= thaw_at_) {  // the freeze ends: forget the ring, explore afresh
    frozen_ = false;
    for (Ring& r : rings_) r = Ring{};
    explore_left_ = kExploreAfterFreeze;
  }
  Ring& ring = rings_[plane.value];
  const uint8_t bit = static_cast<uint8_t>(1u << ring.head);
  ring.slots[ring.head] = slot;
  ring.fresh = static_cast<uint8_t>(ring.fresh | bit);
  ring.filled = static_cast<uint8_t>(ring.filled | bit);
  ring.head = static_cast<uint8_t>((ring.head + 1) % kRingEntries);
}

// A timeout while not exploring freezes the ring for max(8 RTT, 100 us): the EVs that were
// acknowledged last are the ones known to work while the fabric is failing.
void RepsPolicy::on_timeout(Instant now, Duration rtt) {
  if (frozen_ || explore_left_ > 0) return;
  frozen_ = true;
  thaw_at_ = now + Duration{std::max<int64_t>(8 * rtt.ns, kMinFreezeNs)};
}

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

}  // namespace mrc
