// Path policies: how an EV set chooses among its GOOD EVs and which feedback it holds against
// an EV, inside the spec's state machine.
//
// The EV set (ev_set.h) stays authoritative: DENIED, ASSUMED_BAD after a retransmission
// timeout, the ev_min_active floor, same-plane replacement and background probing work the
// same under every policy. A policy may only
//   - choose another GOOD, active EV of the same plane than the one the rotation offers
//     (choose), and
//   - judge feedback: whether an ECN mark or trim SKIPs the EV, and what a loss that was not a
//     timeout does to the EV: a strike (the rules), a SKIP only, or nothing.
// It sees clean and marked acknowledgements (the echoed EV), RTT samples, the EVs the state
// machine retires, the bytes each acknowledgement delivers, and timeouts. No policy (kRules)
// is the EV set's own rules exactly and costs nothing per packet; QpConfig's default is the
// learned p2c policy (learned_policies.h).
//
// The baselines a learned policy must beat (../shared/reference/learned-paths.md):
//   kOblivious  oblivious spraying: the rotation, and no feedback is held against an EV except
//               a timeout. What spraying without MRC's SKIP and strike rules does.
//   kReps       recycled entropy packet spraying (REPS, Bonato et al., 2024): EVs whose
//               packets were acknowledged without an ECN mark go into a small ring per plane
//               and are reused first, each once; with none fresh the rotation explores. After a
//               timeout the ring freezes: its EVs are reused round and round, without being
//               used up, until a clean acknowledgement arrives at least `freeze` later; then
//               the ring is emptied and the next kExploreAfterFreeze packets explore.
// The learned policies are in learned_policies.h, the watchdog that guards any policy in
// path_watchdog.h, and the simulator's oracle (which knows the faults) in sim/oracle_policy.h;
// SprayCredits below spreads packets by weight for hedge and the oracle.
// A policy that draws random numbers draws them from a Prng seeded from the EV set's seed, so
// a run replays exactly; exploring is otherwise the rotation's (seeded) choice.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "mrc/config.hpp"
#include "mrc/types.hpp"
#include "util/prng.h"

namespace mrc {

class EvSet;

// Each hook's default is what the rules do, so a policy overrides only where it differs.
class PathPolicy {
 public:
  virtual ~PathPolicy() = default;
  // The slot for the plane's next packet: `candidate` (the rotation's choice, or kNoSlot) or
  // another slot for which evs.choosable(slot, plane, avoid) holds.
  virtual uint16_t choose(const EvSet& /*evs*/, PlaneId /*plane*/, uint16_t candidate,
                          uint16_t /*avoid*/) {
    return candidate;
  }
  // Whether an ECN mark or a trim SKIPs the EV (the rules: yes).
  virtual bool skips_on_marks() const { return true; }
  // What a loss on the slot's usable EV, found other than by a timeout, does to the EV: the
  // rules' strike (a first one SKIPs, a second soon after retires), a SKIP only (passed over
  // once, never retired for it), or nothing.
  enum class Verdict : uint8_t { kStrike, kSkip, kIgnore };
  virtual Verdict judge_loss(const EvSet& /*evs*/, uint16_t /*slot*/, PlaneId /*plane*/) {
    return Verdict::kStrike;
  }
  // An acknowledgement echoed `slot` without an ECN mark.
  virtual void on_clean_ack(uint16_t /*slot*/, PlaneId /*plane*/, Instant /*now*/) {}
  // An acknowledgement echoed `slot` with an ECN mark, or a packet sent on it was trimmed.
  virtual void on_mark(uint16_t /*slot*/, PlaneId /*plane*/) {}
  // An RTT sample taken on the slot's EV.
  virtual void on_rtt(uint16_t /*slot*/, PlaneId /*plane*/, Duration /*rtt*/) {}
  // The state machine retired the slot's EV (ASSUMED_BAD).
  virtual void on_retired(uint16_t /*slot*/, PlaneId /*plane*/) {}
  // An acknowledgement newly acknowledged `bytes` of payload; `rtt` is the QP's smoothed RTT.
  virtual void on_delivered(uint64_t /*bytes*/, Instant /*now*/, Duration /*rtt*/) {}
  // The retransmission timer fired; `rtt` is the QP's smoothed RTT.
  virtual void on_timeout(Instant /*now*/, Duration /*rtt*/) {}
  // Bytes of per-QP state the policy keeps (the ship gate's memory bound).
  virtual size_t state_bytes() const = 0;
};

// One EV of the plane's rotation drawn at random: the slot if evs.choosable(slot, plane,
// avoid), else kNoSlot (a rotation that is empty draws nothing). The alternative that p2c and
// the health policy weigh against the rotation's choice.
uint16_t draw_choosable(const EvSet& evs, PlaneId plane, uint16_t avoid, Prng& prng);

struct EvSetConfig;
// nullptr for kRules. `slots`: the EV set's slot count; `seed`: for a policy's random draws.
// With config.watchdog.enabled the policy comes wrapped in a PathWatchdog.
std::unique_ptr<PathPolicy> make_path_policy(const EvSetConfig& config, size_t slots,
                                             uint64_t seed);

// Per-EV credits that spread a plane's packets in proportion to weights in [0, 1] (smooth
// weighted round robin): each offer adds the EV's weight to its credit, and the first EV
// whose credit reaches a whole packet carries it. The rotation's candidate is offered first,
// then the plane's rotation in order from a moving start, so an EV of weight 1 is taken at
// once and one of weight w carries w of the packets it would have carried. Deterministic;
// one byte per slot.
class SprayCredits {
 public:
  explicit SprayCredits(size_t slots) : credit_(slots, 0) {}
  // `weight(context, slot)` in [0, 1]. Returns a slot for which evs.choosable holds, or
  // `candidate` when no EV of the plane earns a packet within two passes.
  using WeightFn = double (*)(const void* context, uint16_t slot);
  uint16_t pick(const EvSet& evs, PlaneId plane, uint16_t candidate, uint16_t avoid,
                WeightFn weight, const void* context);
  size_t state_bytes() const { return credit_.size(); }

 private:
  bool offer(uint16_t slot, double weight);
  std::vector<uint8_t> credit_;  // per slot, in 1/255 of a packet
  uint16_t start_ = 0;
};

class ObliviousPolicy final : public PathPolicy {
 public:
  bool skips_on_marks() const override { return false; }
  Verdict judge_loss(const EvSet&, uint16_t, PlaneId) override { return Verdict::kIgnore; }
  size_t state_bytes() const override { return sizeof(*this); }
};

class RepsPolicy final : public PathPolicy {
 public:
  static constexpr uint32_t kRingEntries = 8;
  static constexpr uint16_t kExploreAfterFreeze = 16;
  static constexpr int64_t kMinFreezeNs = 100'000;

  explicit RepsPolicy(int planes) : rings_(static_cast<size_t>(planes)) {}
  uint16_t choose(const EvSet& evs, PlaneId plane, uint16_t candidate, uint16_t avoid) override;
  void on_clean_ack(uint16_t slot, PlaneId plane, Instant now) override;
  void on_timeout(Instant now, Duration rtt) override;
  size_t state_bytes() const override { return sizeof(*this) + rings_.size() * sizeof(Ring); }
  bool frozen() const { return frozen_; }

 private:
  // One plane's recycled EVs: entries written at `head` round the ring; `fresh` bit i: entry i
  // has not been reused yet (outside a freeze an entry is reused once).
  struct Ring {
    std::array<uint16_t, kRingEntries> slots;
    uint8_t head = 0;
    uint8_t fresh = 0;
    uint8_t filled = 0;  // bit i: entry i holds a slot
    uint8_t cursor = 0;  // a freeze's round-robin position
  };
  uint16_t reuse_fresh(const EvSet& evs, Ring& ring, PlaneId plane, uint16_t avoid);
  uint16_t reuse_frozen(const EvSet& evs, Ring& ring, PlaneId plane, uint16_t avoid);

  std::vector<Ring> rings_;
  Instant thaw_at_{0};
  uint16_t explore_left_ = 0;
  bool frozen_ = false;
};

}  // namespace mrc
