// EV set: rotation, state machine, replacement from the same plane, background probing.
// See ev_set.h for the algorithm; this file keeps every function short and the invariants
// explicit: in auto mode each plane's rotation holds exactly active_count/planes slots, all of
// that plane; in explicit mode it holds the plane's listed EVs, with repeats.
#include "core/ev_set.h"

#include <algorithm>

#include "mrc/assert.hpp"

namespace mrc {

namespace {
// The legal transitions (ev_set.h): SKIP only from GOOD; ASSUMED_BAD only from a usable state
// (a loss or a timeout); GOOD (a revival, a SKIP spent, an EV allowed again) and DENIED (the
// controller) from any. In particular DENIED is left only for GOOD, by the controller.
bool legal_transition(EvState from, EvState to) {
  switch (to) {
    case EvState::kSkip:
      return from == EvState::kGood;
    case EvState::kAssumedBad:
      return from == EvState::kGood || from == EvState::kSkip;
    case EvState::kGood:
    case EvState::kDenied:
      return true;
  }
  return false;
}
}  // namespace

const char* to_string(EvState s) {
  switch (s) {
    case EvState::kGood:
      return "GOOD";
    case EvState::kSkip:
      return "SKIP";
    case EvState::kAssumedBad:
      return "ASSUMED_BAD";
    case EvState::kDenied:
      return "DENIED";
  }
  return "?";
}

EvSet::EvSet(const EvSetConfig& config, uint64_t seed)
    : config_(config),
      prng_(seed),
      plane_probe_tat_(config.planes, Instant{0}),
      plane_probe_at_(config.planes, Instant::never()) {
  MRC_ASSERT(config.planes >= 1 && config.planes <= kMaxPlanes);
  planes_ = static_cast<uint8_t>(config.planes);
  if (config.explicit_evs.empty()) {
    build_auto();
  } else {
    build_explicit();
  }
  MRC_ASSERT(order_.size() < (1u << 16));  // rotations index it with 16 bits
  details_.resize(slots_.size());
  probe_burst_ = std::max<int64_t>(1, static_cast<int64_t>(slots_.size()) / planes_);
  // The policy's seed is derived, not drawn, so the rotation's draws are the same under every
  // policy.
  uint64_t mix = seed ^ 0x9A7B'0C1D'2E3F'4051ULL;
  policy_ = make_path_policy(config, slots_.size(), Prng::splitmix64(mix));
  for (int p = 0; p < config.planes; ++p) reshuffle(PlaneId(static_cast<uint8_t>(p)));
}

void EvSet::build_auto() {
  MRC_ASSERT(config_.active_count % config_.planes == 0);
  const uint32_t per_plane = config_.active_count / config_.planes;
  slots_per_plane_ = per_plane + config_.backup_per_plane;
  port_stride_ = config_.port_stride != 0 ? config_.port_stride : slots_per_plane_;
  MRC_ASSERT(port_stride_ >= slots_per_plane_);
  const uint32_t total = config_.planes * slots_per_plane_;
  MRC_ASSERT(total < (1u << kSlotBits));
  // Sized once: a run with thousands of QPs builds thousands of these at setup.
  slots_.reserve(total);
  order_.reserve(config_.active_count);
  uint16_t index = 0;
  for (int p = 0; p < config_.planes; ++p) {
    rotations_[p].begin = static_cast<uint16_t>(order_.size());
    rotations_[p].size = static_cast<uint16_t>(per_plane);
    for (uint32_t i = 0; i < slots_per_plane_; ++i, ++index) {
      Slot& s = slots_.emplace_back();
      s.plane = PlaneId(static_cast<uint8_t>(p));
      s.ev = fresh_ev(index);
      s.active = i < per_plane;
      if (s.active) order_.push_back(index);
    }
    count_usable(PlaneId(static_cast<uint8_t>(p)), static_cast<int>(per_plane));
  }
}

std::vector<std::pair<uint32_t, uint16_t>>::const_iterator EvSet::explicit_lower_bound(
    Ev ev) const {
  return std::lower_bound(explicit_index_.begin(), explicit_index_.end(),
                          std::make_pair(ev.value, uint16_t{0}));
}

// One slot per distinct EV, in order of first appearance; every listing adds a rotation entry.
void EvSet::build_explicit() {
  std::vector<std::vector<uint16_t>> listed(config_.planes);  // per plane, in listing order
  for (const ExplicitEv& e : config_.explicit_evs) {
    MRC_ASSERT(e.plane.value < config_.planes);
    auto it = explicit_lower_bound(e.ev);
    uint16_t index = 0;
    if (it != explicit_index_.end() && it->first == e.ev.value) {
      index = it->second;
      MRC_ASSERT(slots_[index].plane == e.plane);
    } else {
      MRC_ASSERT(slots_.size() < (1u << kSlotBits));
      index = static_cast<uint16_t>(slots_.size());
      Slot& s = slots_.emplace_back();
      s.plane = e.plane;
      s.ev = e.ev;
      s.active = true;
      count_usable(s.plane, 1);
      explicit_index_.insert(it, {e.ev.value, index});
    }
    listed[e.plane.value].push_back(index);
  }
  for (int p = 0; p < config_.planes; ++p) {
    rotations_[p].begin = static_cast<uint16_t>(order_.size());
    rotations_[p].size = static_cast<uint16_t>(listed[p].size());
    order_.insert(order_.end(), listed[p].begin(), listed[p].end());
  }
}

Ev EvSet::fresh_ev(uint16_t slot) {
  if (config_.port_base != 0) {
    const uint32_t plane = slot / slots_per_plane_;
    return Ev(config_.port_base + plane * port_stride_ + slot % slots_per_plane_);
  }
  return Ev((prng_.next_u32() & ~((1u << kSlotBits) - 1)) | slot);
}

void EvSet::reshuffle(PlaneId plane) {
  MRC_ASSERT(plane.value < planes_);
  const std::span<uint16_t> order = rotation(plane);
  Rotation& r = rotations_[plane.value];
  for (size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[prng_.below(i)]);
  }
  // Never start a rotation with the slot that ended the previous one: two consecutive packets
  // would take the same path.
  if (order.size() > 1 && order[0] == r.last) {
    std::swap(order[0], order[1 + prng_.below(order.size() - 1)]);
  }
  r.cursor = 0;
  ++r.round;
  // A rotation holds only its own plane's slots (refill swaps within a plane).
  MRC_DASSERT(std::all_of(order.begin(), order.end(), [&](uint16_t i) {
    return i < slots_.size() && slots_[i].plane == plane && slots_[i].active;
  }));
}

uint16_t EvSet::next(PlaneId plane, uint16_t avoid) {
  MRC_ASSERT(plane.value < planes_);
  const std::span<uint16_t> order = rotation(plane);
  Rotation& r = rotations_[plane.value];
  uint16_t fallback = kNoSlot;
  // Two passes at most: SKIP slots turn GOOD when passed over, so the second pass can use them.
  for (size_t step = 0; step < 2 * order.size(); ++step) {
    if (r.cursor >= order.size()) reshuffle(plane);
    MRC_ASSERT(r.cursor < order.size());
    const uint16_t index = order[r.cursor++];
    Slot& s = slots_[index];
    if (s.state == EvState::kSkip) {
      s.state = EvState::kGood;  // skipped for this rotation only
      s.skip_round = r.round;
      continue;
    }
    if (s.state != EvState::kGood || s.skip_round == r.round) continue;  // (another copy)
    if (index == avoid) {
      fallback = index;
      continue;
    }
    return r.last = use(plane, index, avoid);
  }
  // Only `avoid` was left: the rules send on it without counting a use; a policy may still pick.
  return r.last = policy_ ? use(plane, fallback, avoid) : fallback;
}

// The policy's say over the rotation's choice, then the use counted against a strike.
uint16_t EvSet::use(PlaneId plane, uint16_t candidate, uint16_t avoid) {
  const uint16_t index = policy_ ? policy_->choose(*this, plane, candidate, avoid) : candidate;
  // A packet leaves only on a usable EV of the plane it was asked for, whatever the policy.
  MRC_DASSERT(index == kNoSlot || (index < slots_.size() && slots_[index].plane == plane &&
                                   usable(slots_[index].state)));
  if (index != kNoSlot && slots_[index].strike_uses > 0) --slots_[index].strike_uses;
  return index;
}

EvStats EvSet::stats(uint16_t index) const {
  EvStats stats = details_[index].counts;
  stats.packets = slots_[index].packets;
  stats.bytes = slots_[index].bytes;
  return stats;
}

uint16_t EvSet::slot_of(Ev ev) const {
  if (is_explicit()) {
    auto it = explicit_lower_bound(ev);
    return it != explicit_index_.end() && it->first == ev.value ? it->second : kNoSlot;
  }
  uint32_t index = ev.value & ((1u << kSlotBits) - 1);
  if (config_.port_base != 0) {
    const uint32_t offset = ev.value - config_.port_base;  // wraps for ports below the base
    if (offset % port_stride_ >= slots_per_plane_) return kNoSlot;
    index = offset / port_stride_ * slots_per_plane_ + offset % port_stride_;
  }
  if (index >= slots_.size() || slots_[index].ev != ev) return kNoSlot;
  return static_cast<uint16_t>(index);
}

void EvSet::set_state(uint16_t slot, EvState state) {
  MRC_ASSERT(slot < slots_.size());
  Slot& s = slots_[slot];
  if (s.state == state) return;
  MRC_ASSERT(legal_transition(s.state, state));
  assumed_bad_ -= s.state == EvState::kAssumedBad ? 1 : 0;
  assumed_bad_ += state == EvState::kAssumedBad ? 1 : 0;
  probe_times_dirty_ |= s.state == EvState::kAssumedBad || state == EvState::kAssumedBad;
  if (s.active && usable(s.state) != usable(state)) count_usable(s.plane, usable(state) ? 1 : -1);
  s.state = state;
  ++details_[slot].counts.state_changes;
  MRC_ASSERT(assumed_bad_ <= slots_.size() && usable_active_all_ <= slots_.size());
  MRC_DASSERT(counts_consistent());
}

// The O(1) counters every packet reads agree with the slots (checked in debug builds, so the
// simulator's seed sweeps catch a transition that forgot one).
bool EvSet::counts_consistent() const {
  uint32_t bad = 0;
  uint32_t usable_all = 0;
  std::array<uint32_t, kMaxPlanes> usable_plane{};
  for (const Slot& s : slots_) {
    bad += s.state == EvState::kAssumedBad ? 1 : 0;
    if (s.active && usable(s.state)) {
      ++usable_all;
      ++usable_plane[s.plane.value];
    }
  }
  if (bad != assumed_bad_ || usable_all != usable_active_all_) return false;
  for (uint8_t p = 0; p < planes_; ++p) {
    if (usable_plane[p] != rotations_[p].usable) return false;
  }
  return true;
}

// Passed over for the rest of this rotation, if GOOD.
void EvSet::skip(uint16_t slot) {
  if (slots_[slot].state != EvState::kGood) return;
  set_state(slot, EvState::kSkip);
  ++transitions_.to_skip;
}

void EvSet::on_ecn(uint16_t slot) {
  ++details_[slot].counts.ecn_marks;
  on_mark(slot);
}

void EvSet::on_trim(uint16_t slot) {
  ++details_[slot].counts.trims;
  on_mark(slot);
}

void EvSet::on_mark(uint16_t slot) {
  if (!policy_) return skip(slot);
  policy_->on_mark(slot, slots_[slot].plane);
  if (policy_->skips_on_marks()) skip(slot);
}

void EvSet::on_loss(uint16_t slot, Instant now, bool timeout) {
  Slot& s = slots_[slot];
  ++details_[slot].counts.losses;
  if (s.state == EvState::kAssumedBad) {
    s.probe_successes = 0;
    return;
  }
  if (!usable(s.state)) return;
  const PathPolicy::Verdict verdict = timeout || !policy_
                                          ? PathPolicy::Verdict::kStrike
                                          : policy_->judge_loss(*this, slot, s.plane);
  if (verdict == PathPolicy::Verdict::kSkip) skip(slot);
  if (verdict != PathPolicy::Verdict::kStrike) return;
  if (s.active && usable_active() <= config_.min_active) {
    ++transitions_.floor_held;
    set_state(slot, EvState::kSkip);
    return;
  }
  if (config_.loss_strike_uses > 0 && s.strike_uses == 0) {  // a first strike: SKIP only
    s.strike_uses = config_.loss_strike_uses;
    set_state(slot, EvState::kSkip);
    ++transitions_.to_skip;
    return;
  }
  s.strike_uses = 0;
  retire(slot, now);
  // A strike past the floor retires the EV; the floor's guard above kept enough in rotation.
  MRC_ASSERT(s.state == EvState::kAssumedBad && !usable(s.state));
}

void EvSet::retire(uint16_t slot, Instant now) {
  Slot& s = slots_[slot];
  set_state(slot, EvState::kAssumedBad);
  ++transitions_.to_assumed_bad;
  s.probe_successes = 0;
  s.failed_probes = 0;
  s.probe_outstanding = false;
  details_[slot].next_probe_at = now + config_.probe_interval;
  if (policy_) policy_->on_retired(slot, s.plane);
  refill(s.plane);
  // Out of rotation, counted, and waiting for its probes (refill took it out of the rotation if
  // a backup could stand in).
  MRC_ASSERT(assumed_bad_ > 0 && s.state == EvState::kAssumedBad && !s.probe_outstanding);
}

// Swaps GOOD backups of `plane` into rotation positions held by unusable active slots.
void EvSet::refill(PlaneId plane) {
  if (is_explicit()) return;  // no backups: the controller's list is the whole set
  for (uint16_t& position : rotation(plane)) {
    if (usable(slots_[position].state)) continue;
    for (size_t index = 0; index < slots_.size(); ++index) {
      Slot& b = slots_[index];
      if (b.active || b.plane != plane || b.state != EvState::kGood) continue;
      slots_[position].active = false;  // unusable: not counted
      b.active = true;
      count_usable(plane, 1);
      position = static_cast<uint16_t>(index);
      ++transitions_.replaced;
      break;
    }
  }
  // The plane's rotation keeps its size; its usable slots are at most that many.
  MRC_ASSERT(rotations_[plane.value].usable <= rotations_[plane.value].size);
}

void EvSet::on_probe_answered(uint16_t slot) {
  Slot& s = slots_[slot];
  ++details_[slot].counts.probes_answered;
  if (s.state != EvState::kAssumedBad || !s.probe_outstanding) return;
  s.probe_outstanding = false;
  s.failed_probes = 0;
  // An ASSUMED_BAD slot has fewer successes than revive it (the last one did).
  MRC_ASSERT(s.probe_successes < std::max<uint8_t>(config_.revive_probes, 1));
  if (++s.probe_successes < config_.revive_probes) return;
  set_state(slot, EvState::kGood);
  details_[slot].next_probe_at = Instant::never();
  ++transitions_.revived;
  refill(s.plane);
}

void EvSet::revive(uint16_t slot) {
  Slot& s = slots_[slot];
  s.strike_uses = 0;  // the loss that struck it was not one
  if (s.state != EvState::kAssumedBad) return;
  set_state(slot, EvState::kGood);
  details_[slot].next_probe_at = Instant::never();
  s.probe_outstanding = false;
  ++transitions_.revived;
  refill(s.plane);
}

void EvSet::refresh_probe_times() const {
  if (!probe_times_dirty_) return;
  std::fill(plane_probe_at_.begin(), plane_probe_at_.end(), Instant::never());
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.state == EvState::kAssumedBad)
      plane_probe_at_[s.plane.value] =
          std::min(plane_probe_at_[s.plane.value], details_[i].next_probe_at);
  }
  for (size_t p = 0; p < plane_probe_at_.size(); ++p)
    if (plane_probe_at_[p] != Instant::never())
      plane_probe_at_[p] = std::max(plane_probe_at_[p], probe_gate(p));
  probe_at_ = *std::min_element(plane_probe_at_.begin(), plane_probe_at_.end());
  probe_times_dirty_ = false;
}

uint16_t EvSet::probe_due(PlaneId plane, Instant now) {
  if (assumed_bad_ == 0) return kNoSlot;  // the common case, on every packet sent
  refresh_probe_times();
  if (now < plane_probe_at_[plane.value]) return kNoSlot;
  uint16_t due = kNoSlot;  // the most overdue: with the gate binding, the first due would starve
  for (size_t index = 0; index < slots_.size(); ++index) {  // the rest
    const Slot& s = slots_[index];
    const Instant at = details_[index].next_probe_at;
    if (s.plane == plane && s.state == EvState::kAssumedBad && at <= now &&
        (due == kNoSlot || at < details_[due].next_probe_at))
      due = static_cast<uint16_t>(index);
  }
  return due;
}

void EvSet::on_probe_sent(uint16_t slot, Instant now, Duration rtt) {
  Slot& s = slots_[slot];
  MRC_ASSERT(s.state == EvState::kAssumedBad);
  if (s.probe_outstanding) {  // the previous probe went unanswered
    s.probe_successes = 0;
    if (++s.failed_probes >= config_.regenerate_after_failed_probes && config_.port_base == 0 &&
        !is_explicit()) {
      s.ev = fresh_ev(slot);  // give up on this path; try a new random one
      s.failed_probes = 0;
      ++transitions_.regenerated;
    }
  }
  s.probe_outstanding = true;
  MRC_ASSERT(s.state == EvState::kAssumedBad && slot_of(s.ev) == slot);  // a fresh EV maps back
  ++details_[slot].counts.probes_sent;
  Instant& tat = plane_probe_tat_[s.plane.value];
  tat = std::max(tat, now) + config_.probe_interval;
  // Back off while the path stays dead, so a dead plane's EVs do not
  // flood it with probes; the first answer brings the interval back.
  // A few lost probes are normal on a lossy path; back off only after kProbesBeforeBackoff.
  const uint32_t backoff = s.failed_probes <= kProbesBeforeBackoff
                               ? 0
                               : std::min<uint32_t>(s.failed_probes - kProbesBeforeBackoff, 7);
  // A probe cannot be answered sooner than an RTT: never judge (and re-send) one earlier.
  // The backoff is capped at 128 configured intervals or 4 RTTs, whichever is longer, so a
  // repaired path is found again within a few RTTs.
  const int64_t interval_ns = std::max(config_.probe_interval.ns, rtt.ns);
  const int64_t cap_ns = std::max(config_.probe_interval.ns << 7, 4 * rtt.ns);
  details_[slot].next_probe_at = now + Duration{std::min(interval_ns << backoff, cap_ns)};
  probe_times_dirty_ = true;
}

Instant EvSet::probe_gate(size_t plane) const {
  return plane_probe_tat_[plane] + Duration{-(probe_burst_ - 1) * config_.probe_interval.ns};
}

Instant EvSet::next_probe_at() const {
  if (assumed_bad_ == 0) return Instant::never();
  refresh_probe_times();
  return probe_at_;
}

bool EvSet::set_denied(uint16_t slot, bool denied) {
  if (slot >= slots_.size()) return false;
  Slot& s = slots_[slot];
  if (denied) {
    if (s.state == EvState::kDenied) return true;
    set_state(slot, EvState::kDenied);
    ++transitions_.to_denied;
    details_[slot].next_probe_at = Instant::never();
    refill(s.plane);
  } else if (s.state == EvState::kDenied) {
    set_state(slot, EvState::kGood);
  }
  return true;
}

}  // namespace mrc
