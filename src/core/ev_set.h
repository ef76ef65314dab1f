// The entropy-value (EV) set of one queue pair and the per-EV state machine.
//
// Each plane owns an equal share of the active EVs plus a few backups. The sender asks for the
// next EV of a plane; EVs are visited in a pseudo-random order that is reshuffled every rotation,
// so consecutive packets take different paths. States (OCP MRC):
//   GOOD         used in rotation.
//   SKIP         ECN-marked or trimmed recently: passed over once, then GOOD again.
//   ASSUMED_BAD  a second real (untrimmed) loss within loss_strike_uses uses of the EV after a
//                first (which only SKIPs it), or a timeout: out of rotation at once, replaced by a
//                GOOD backup of the same plane (planes stay equally loaded), probed in the
//                background, at most once per RTT (after 3 unanswered probes in a row the
//                interval doubles with each, up to 128 intervals or 4 RTTs). A plane's probes
//                together are rate-limited (GCRA): a burst of one per EV of the plane, then
//                one per probe_interval, the most overdue EV first. Unbounded, dozens of EVs
//                retired at once and each probed every 50 us overflowed a software receiver's
//                socket buffer; the probes' own answers were lost and every EV stayed retired
//                (a livelock).
//                GOOD again after `revive_probes` consecutive answered probes. An EV
//                that fails many probes in a row is given a fresh random value (a new path).
//   DENIED       set by the controller; never leaves that state on its own.
// A floor (ev_min_active) keeps a burst of losses from taking every EV out of rotation: a loss
// that would leave fewer usable active EVs than the floor only SKIPs the EV.
// The low kSlotBits of every EV value are its slot index, so an echoed EV maps back to its slot
// in O(1); the remaining bits are random and give the path diversity. In port mode
// (EvSetConfig::port_base) an EV is a UDP source port instead (see EvSetConfig).
// Explicit mode (EvSetConfig::explicit_evs, OCP EV mode EXP): the controller lists the EVs and
// their planes. Each distinct EV is one slot, always active; an EV listed k times appears k
// times in its plane's rotation (so it carries k shares of the plane's packets). There are no
// backups and no regeneration: an ASSUMED_BAD EV leaves the rotation until probes revive it,
// and a plane whose listed EVs are all unusable carries nothing. A SKIP (ECN mark, trim) passes
// over every copy of the EV for the rest of that rotation, so the marked path's share drops. Echoed
// EVs map back to slots by binary search over the sorted list instead of the slot bits.
// Path policy (EvSetConfig::path_policy, path_policy.h): without one the rules above are the
// whole of it. With one, the policy may swap the rotation's choice for another GOOD active EV of
// the same plane, and decide whether marks SKIP and non-timeout losses strike; every state
// change above (retirement on a timeout, the floor, replacement, probing, DENIED) stays here.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/path_policy.h"
#include "mrc/types.hpp"
#include "util/prng.h"

namespace mrc {

enum class EvState : uint8_t { kGood, kSkip, kAssumedBad, kDenied };
const char* to_string(EvState s);

struct EvStats {
  uint64_t packets = 0;
  uint64_t bytes = 0;
  uint64_t losses = 0;
  uint64_t ecn_marks = 0;
  uint64_t trims = 0;
  uint64_t probes_sent = 0;
  uint64_t probes_answered = 0;
  uint64_t state_changes = 0;
};

struct EvTransitions {
  uint64_t to_skip = 0;
  uint64_t to_assumed_bad = 0;
  uint64_t revived = 0;
  uint64_t to_denied = 0;
  uint64_t replaced = 0;
  uint64_t regenerated = 0;
  uint64_t floor_held = 0;  // losses that did not retire an EV because of ev_min_active
};

struct EvSetConfig {
  int planes = 1;
  uint16_t active_count = 128;  // total over planes
  uint16_t backup_per_plane = 8;
  uint16_t min_active = 16;
  Duration probe_interval{50'000};
  uint8_t revive_probes = 3;
  // Two strikes: a first loss on an EV only SKIPs it; a second one within this many uses of
  // the EV (or already in flight) retires it. A failed path loses the next packet too and is
  // retired one packet later; random loss (1 % per link: ~4 % per packet, a repeat within two
  // uses of an EV ~8 %) no longer retires an EV per loss, whose probes and replacements cost
  // as much as the retransmission. 0: every loss retires (one strike).
  uint8_t loss_strike_uses = 2;
  uint16_t regenerate_after_failed_probes = 16;
  // 0: EVs are random 32-bit values (low kSlotBits = slot). Otherwise EVs are UDP source ports:
  // the j-th slot of plane p uses port port_base + p * port_stride + j, so a UDP datapath that
  // binds port_stride source ports per plane can send EV e from the socket bound to port e, and
  // the echoed source port maps straight back to the slot. Port EVs have no spare randomness,
  // so they are never regenerated.
  uint16_t port_base = 0;
  // Ports per plane in port mode; 0 = the plane's slot count (ports packed back to back).
  uint16_t port_stride = 0;
  // Non-empty: explicit mode; active_count and backup_per_plane are ignored. Every plane must
  // be < planes and an EV value may not appear on two planes (QpConfig::validate checks).
  std::vector<ExplicitEv> explicit_evs;
  PathPolicyKind path_policy = PathPolicyKind::kRules;
  HealthPolicyConfig health;
  P2cPolicyConfig p2c;
  HedgePolicyConfig hedge;
  PathWatchdogConfig watchdog;
};

class EvSet {
 public:
  static constexpr uint32_t kSlotBits = 11;
  static constexpr uint16_t kNoSlot = 0xFFFF;
  static constexpr uint32_t kProbesBeforeBackoff = 3;

  // What a packet reads and writes of its EV. The fields only probing and reporting read (probe
  // time, loss and mark counters) live apart, in details_.
  struct Slot {
    Ev ev{0};
    uint32_t skip_round = UINT32_MAX;  // the plane's rotation in which a SKIP was spent
    PlaneId plane{0};
    EvState state = EvState::kGood;
    bool active = false;
    bool probe_outstanding = false;
    uint8_t probe_successes = 0;
    uint8_t strike_uses = 0;  // after a first loss: uses left in which a second one retires it
    uint16_t failed_probes = 0;
    uint64_t packets = 0;  // data packets sent on the EV (EvStats::packets)
    uint64_t bytes = 0;    // their payload bytes (EvStats::bytes)
  };

  EvSet(const EvSetConfig& config, uint64_t seed);

  // Next EV slot of `plane` in rotation, or kNoSlot if the plane has no usable EV. If possible
  // the result differs from `avoid` (used so a retransmission takes another path).
  uint16_t next(PlaneId plane, uint16_t avoid = kNoSlot);

  // Slot of an echoed EV value, or kNoSlot if it is not (or no longer) one of ours.
  uint16_t slot_of(Ev ev) const;

  // A run of packets on one EV (QpConfig::ev_burst_packets, control_burst_packets): its slot
  // and how many more packets may follow on it.
  struct Burst {
    uint16_t slot = kNoSlot;
    uint16_t left = 0;
  };
  // The slot of the plane's next packet of a run of up to `k`: the burst's while it has packets
  // left and its EV is still GOOD and active, else next(plane), which starts a new burst. A
  // packet that stays on the burst's EV counts as a use of it, so a strike's window is the same
  // number of packets whatever the burst. With k <= 1 this is exactly next(plane).
  uint16_t next_in_burst(PlaneId plane, Burst& burst, uint16_t k) {
    if (burst.left > 0) {
      Slot& s = slots_[burst.slot];
      if (s.active && s.state == EvState::kGood) {
        --burst.left;
        if (s.strike_uses > 0) --s.strike_uses;
        return burst.slot;
      }
    }
    const uint16_t slot = next(plane);
    burst = {slot, slot == kNoSlot || k <= 1 ? uint16_t{0} : static_cast<uint16_t>(k - 1)};
    return slot;
  }

  void on_ecn(uint16_t slot);
  void on_trim(uint16_t slot);
  // A packet sent on the slot's EV was lost: found by the retransmission timer (`timeout`, which
  // every policy holds against the EV) or by any other detection (which a policy may not).
  void on_loss(uint16_t slot, Instant now, bool timeout = false);
  // An acknowledgement echoed the slot's EV without an ECN mark (seen by the policy only).
  void on_clean_ack(uint16_t slot, Instant now) {
    if (policy_) policy_->on_clean_ack(slot, slots_[slot].plane, now);
  }
  // An RTT sample taken on the slot's EV (seen by the policy only).
  void on_rtt(uint16_t slot, Duration rtt) {
    if (policy_) policy_->on_rtt(slot, slots_[slot].plane, rtt);
  }
  // An acknowledgement newly acknowledged `bytes` of payload (seen by the policy only).
  void on_delivered(uint64_t bytes, Instant now, Duration rtt) {
    if (policy_) policy_->on_delivered(bytes, now, rtt);
  }
  // The QP's retransmission timer fired (seen by the policy only).
  void on_timeout(Instant now, Duration rtt) {
    if (policy_) policy_->on_timeout(now, rtt);
  }
  // Whether the slot may carry the plane's next packet: GOOD, in rotation, on that plane, and
  // not `avoid` (what a path policy may choose instead of the rotation's slot).
  bool choosable(uint16_t slot, PlaneId plane, uint16_t avoid = kNoSlot) const {
    if (slot >= slots_.size() || slot == avoid) return false;
    const Slot& s = slots_[slot];
    return s.active && s.state == EvState::kGood && s.plane == plane;
  }
  const PathPolicy* policy() const { return policy_.get(); }
  // Replaces the policy (nullptr: the rules): for a policy the factory cannot build, such as
  // the simulator's oracle.
  void set_policy(std::unique_ptr<PathPolicy> policy) { policy_ = std::move(policy); }
  // The plane's rotation: its active slots (explicit mode: with repeats), in this rotation's
  // shuffled order. What a policy scans for an alternative to the rotation's choice.
  std::span<const uint16_t> rotation_slots(PlaneId plane) const {
    const Rotation& r = rotations_[plane.value];
    return {order_.data() + r.begin, r.size};
  }
  void on_probe_answered(uint16_t slot);
  // The loss that struck or retired this EV turned out to be reordering: its strike is
  // forgotten, and a retired EV is GOOD again at once.
  void revive(uint16_t slot);

  // The slot of `plane` whose background probe is most overdue at `now`, or kNoSlot (also
  // while the plane's probe gap since its last probe has not passed).
  uint16_t probe_due(PlaneId plane, Instant now);
  // `rtt`: the path's smoothed RTT; the next probe of the slot waits at least that long.
  void on_probe_sent(uint16_t slot, Instant now, Duration rtt = Duration{0});
  Instant next_probe_at() const;

  // Controller actions.
  bool set_denied(uint16_t slot, bool denied);

  const Slot& slot(uint16_t index) const { return slots_[index]; }
  // A data packet of `bytes` payload bytes went out on the slot's EV.
  void count_sent(uint16_t index, uint32_t bytes) {
    Slot& s = slots_[index];
    ++s.packets;
    s.bytes += bytes;
  }
  EvStats stats(uint16_t index) const;
  // When the slot's next background probe is due (ASSUMED_BAD slots; never otherwise).
  Instant next_probe_at(uint16_t index) const { return details_[index].next_probe_at; }
  size_t size() const { return slots_.size(); }
  int planes() const { return planes_; }
  // Active slots that are usable (GOOD or SKIP), in all and per plane: counts kept up to date
  // by every change of a slot's state or activity, so these are O(1) (asked on every packet).
  uint16_t usable_active() const { return usable_active_all_; }
  uint16_t usable_active(PlaneId plane) const { return rotations_[plane.value].usable; }
  // Whether the plane has at least one usable EV in rotation. A plane's rotation holds exactly
  // its active slots (explicit mode: every slot, with repeats), so this is usable_active > 0.
  bool has_usable(PlaneId plane) const { return rotations_[plane.value].usable > 0; }
  bool is_explicit() const { return !config_.explicit_evs.empty(); }
  const EvTransitions& transitions() const { return transitions_; }

 private:
  static bool usable(EvState s) { return s == EvState::kGood || s == EvState::kSkip; }
  void build_auto();
  void build_explicit();
  // The first entry of explicit_index_ not below `ev`'s value.
  std::vector<std::pair<uint32_t, uint16_t>>::const_iterator explicit_lower_bound(Ev ev) const;
  Ev fresh_ev(uint16_t slot);
  void set_state(uint16_t slot, EvState state);
  bool counts_consistent() const;
  // Adds `delta` to the usable-active counts of `plane` (a slot became or stopped being one).
  void count_usable(PlaneId plane, int delta) {
    rotations_[plane.value].usable = static_cast<uint16_t>(rotations_[plane.value].usable + delta);
    usable_active_all_ = static_cast<uint16_t>(usable_active_all_ + delta);
  }
  uint16_t use(PlaneId plane, uint16_t candidate, uint16_t avoid);
  void skip(uint16_t slot);
  void on_mark(uint16_t slot);  // an ECN mark or a trim
  void retire(uint16_t slot, Instant now);
  void refill(PlaneId plane);
  void reshuffle(PlaneId plane);

  std::vector<Slot> slots_;
  std::vector<uint16_t> order_;  // every plane's active slot indices, shuffled, plane after plane
  uint32_t assumed_bad_ = 0;     // slots in ASSUMED_BAD, so the per-packet probe check is O(1)
  uint16_t usable_active_all_ = 0;
  uint8_t planes_ = 0;  // config_.planes
  // Per plane: its rotation, where it lies in order_, the next position in it, the slot next()
  // returned last and the rotations so far, and its active slots that are GOOD or SKIP (asked
  // on every packet).
  struct Rotation {
    uint32_t round = 0;
    uint16_t begin = 0;
    uint16_t size = 0;
    uint16_t cursor = 0;
    uint16_t last = kNoSlot;
    uint16_t usable = 0;
  };
  std::array<Rotation, kMaxPlanes> rotations_{};
  std::span<uint16_t> rotation(PlaneId plane) {
    const Rotation& r = rotations_[plane.value];
    return {order_.data() + r.begin, r.size};
  }

  EvSetConfig config_;
  Prng prng_;
  std::unique_ptr<PathPolicy> policy_;  // nullptr: the rules alone
  // Per slot, what packets do not touch: read when probing and reporting. Its counts' packets
  // and bytes stay zero (the slot keeps those).
  struct Detail {
    Instant next_probe_at = Instant::never();
    EvStats counts;
  };
  std::vector<Detail> details_;
  EvTransitions transitions_;
  std::vector<std::pair<uint32_t, uint16_t>>
      explicit_index_;            // explicit mode: (EV value, slot), sorted
  uint32_t slots_per_plane_ = 0;  // auto mode: active share + backups
  uint32_t port_stride_ = 0;      // auto port mode: ports per plane
  // Earliest time a probe may leave on each plane, and on any: the earliest next_probe_at of
  // the plane's ASSUMED_BAD slots, not before its gate. Recomputed (one scan) at the first
  // query after a change, so the per-packet check stays O(1) while EVs are bad.
  void refresh_probe_times() const;
  // Per plane, the GCRA's theoretical arrival time: a probe may leave once now reaches it less
  // the burst allowance (probe_burst_ - 1 intervals); each probe moves it one interval on.
  std::vector<Instant> plane_probe_tat_;
  Instant probe_gate(size_t plane) const;
  int64_t probe_burst_ = 1;
  mutable std::vector<Instant> plane_probe_at_;
  mutable Instant probe_at_ = Instant::never();
  mutable bool probe_times_dirty_ = true;
};

}  // namespace mrc
