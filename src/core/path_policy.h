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
// It sees clean acknowledgements (an echoed EV without an ECN mark) and timeouts. No policy
// (kRules) is the EV set's own rules exactly and costs nothing per packet.
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
// And a first learned one:
//   kHealth     a loss-locality classifier on the feedback path (the brief's C3, reduced to
//               its loss judgement): each EV keeps the share of its feedback (clean
//               acknowledgements and losses) that was a loss. A loss strikes the EV only if its
//               share is above `ratio` times the median share of the plane's EVs in rotation
//               and above `floor`; otherwise it only SKIPs the EV: uniform loss (every EV
//               alike: a lossy NIC, a noisy fabric) then retires no EV, yet a lost packet still
//               steers the next ones elsewhere for a rotation as under the rules (a loss is
//               also a congestion signal), while a bad path (its EVs far above the rest) is
//               struck as under the rules. The median, not the mean, so that a minority of bad EVs
//               (a blackhole, a gray link) does not raise the bar for itself. Its parameters are
//               trained on simulator scenarios (bench/paths_train.py,
//               data/path_policy/health.json). Nothing per packet; a median per loss.
// Policies draw no randomness of their own: exploring is the rotation's (seeded) choice.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "mrc/config.hpp"
#include "mrc/types.hpp"

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
  // The retransmission timer fired; `rtt` is the QP's smoothed RTT.
  virtual void on_timeout(Instant /*now*/, Duration /*rtt*/) {}
  // Bytes of per-QP state the policy keeps (the ship gate's memory bound).
  virtual size_t state_bytes() const = 0;
};

// nullptr for kRules. `slots`: the EV set's slot count.
std::unique_ptr<PathPolicy> make_path_policy(PathPolicyKind kind, const HealthPolicyConfig& health,
                                             int planes, size_t slots);

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

class HealthPolicy final : public PathPolicy {
 public:
  HealthPolicy(const HealthPolicyConfig& config, size_t slots)
      : config_(config), ev_loss_(slots, 0) {}
  Verdict judge_loss(const EvSet& evs, uint16_t slot, PlaneId plane) override;
  void on_clean_ack(uint16_t slot, PlaneId, Instant) override { observe(slot, false); }
  size_t state_bytes() const override { return sizeof(*this) + ev_loss_.size(); }
  // The EV's loss share, and the median of the plane's EVs in rotation, in [0, 1].
  double ev_loss_share(uint16_t slot) const { return ev_loss_[slot] / 255.0; }
  double plane_median_share(const EvSet& evs, PlaneId plane) const;

 private:
  void observe(uint16_t slot, bool lost);

  HealthPolicyConfig config_;
  std::vector<uint8_t> ev_loss_;  // per slot, the loss share in 1/255 (one byte per EV)
};

}  // namespace mrc
