// Path policies (path_policy.h): the baselines behind the EV set's policy seam.
#include "core/path_policy.h"

#include <algorithm>

#include "core/ev_set.h"
#include "core/learned_policies.h"
#include "core/path_watchdog.h"

namespace mrc {

namespace {

std::unique_ptr<PathPolicy> make_bare(const EvSetConfig& config, size_t slots, uint64_t seed) {
  switch (config.path_policy) {
    case PathPolicyKind::kRules:
      return nullptr;
    case PathPolicyKind::kOblivious:
      return std::make_unique<ObliviousPolicy>();
    case PathPolicyKind::kReps:
      return std::make_unique<RepsPolicy>(config.planes);
    case PathPolicyKind::kHealth:
      return std::make_unique<HealthPolicy>(config.health, config.planes, slots, seed);
    case PathPolicyKind::kP2c:
      return std::make_unique<P2cPolicy>(config.p2c, slots, seed);
    case PathPolicyKind::kHedge:
      return std::make_unique<HedgePolicy>(config.hedge, slots);
  }
  return nullptr;
}

}  // namespace

std::unique_ptr<PathPolicy> make_path_policy(const EvSetConfig& config, size_t slots,
                                             uint64_t seed) {
  std::unique_ptr<PathPolicy> policy = make_bare(config, slots, seed);
  if (policy == nullptr || !config.watchdog.enabled) return policy;
  return std::make_unique<PathWatchdog>(config.watchdog, std::move(policy), seed ^ 1);
}

uint16_t draw_choosable(const EvSet& evs, PlaneId plane, uint16_t avoid, Prng& prng) {
  const std::span<const uint16_t> order = evs.rotation_slots(plane);
  if (order.empty()) return EvSet::kNoSlot;
  const uint16_t slot = order[prng.below(order.size())];
  return evs.choosable(slot, plane, avoid) ? slot : EvSet::kNoSlot;
}

// ---- spray credits -----------------------------------------------------------------------

// An offer adds the weight (in 1/255 of a packet, rounded up so that no positive weight starves)
// to the slot's credit; a whole packet's credit is spent on the packet.
bool SprayCredits::offer(uint16_t slot, double weight) {
  if (weight <= 0) return false;
  const int add = weight >= 1 ? 255 : static_cast<int>(weight * 255) + 1;
  const int credit = credit_[slot] + add;
  if (credit >= 255) {
    credit_[slot] = static_cast<uint8_t>(credit - 255);
    return true;
  }
  credit_[slot] = static_cast<uint8_t>(credit);
  return false;
}

uint16_t SprayCredits::pick(const EvSet& evs, PlaneId plane, uint16_t candidate, uint16_t avoid,
                            WeightFn weight, const void* context) {
  if (candidate != EvSet::kNoSlot && offer(candidate, weight(context, candidate))) return candidate;
  const std::span<const uint16_t> order = evs.rotation_slots(plane);
  // Two passes over the plane; if every EV's weight is small none may earn a whole packet in
  // them, and the one with the most credit carries it (its credit spent): the shares stay in
  // proportion to the weights whatever their scale.
  uint16_t richest = candidate;
  int richest_credit = candidate != EvSet::kNoSlot ? credit_[candidate] : -1;
  for (size_t k = 0; k < 2 * order.size(); ++k) {
    const uint16_t slot = order[(start_ + k) % order.size()];
    if (slot == candidate || !evs.choosable(slot, plane, avoid)) continue;
    if (offer(slot, weight(context, slot))) {
      start_ = static_cast<uint16_t>((start_ + k + 1) % order.size());
      return slot;
    }
    if (credit_[slot] > richest_credit) richest = slot, richest_credit = credit_[slot];
  }
  if (richest != EvSet::kNoSlot) credit_[richest] = 0;
  return richest;
}

// ---- REPS --------------------------------------------------------------------------------

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

}  // namespace mrc
