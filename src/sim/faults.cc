// Random faults on the wire of one simulated link: loss, bit corruption, duplication and
// reordering, drawn from that link's own seeded random stream so that faulting one link never
// shifts the random draws of another. Also the FaultAction constructors, so a test's fault
// script reads as a list of named actions.
#include "sim/faults.h"

#include <memory>

#include "mrc/assert.hpp"
#include "sim/link.h"

namespace mrc::sim {

WireOutcome apply_wire_faults(const LinkFaults& faults, Prng& prng, SimPacket& packet,
                              LinkStats& stats) {
  WireOutcome outcome;
  if (prng.chance(faults.loss)) {
    outcome.lost = true;
    return outcome;
  }
  if (prng.chance(faults.corrupt) && !packet.bytes.empty()) {
    seal_deferred_icrc(packet);  // the receiver checks what the sender's ICRC would have been
    const uint64_t bit_index = prng.below(packet.bytes.size() * 8);
    packet.bytes[bit_index / 8] ^= static_cast<uint8_t>(1u << (bit_index % 8));
    ++stats.corrupted;
  }
  if (prng.chance(faults.duplicate)) {
    outcome.duplicate = make_packet(packet);
    ++stats.duplicated;
  }
  if (prng.chance(faults.reorder) && faults.reorder_max_delay.ns > 0) {
    const uint64_t span = static_cast<uint64_t>(faults.reorder_max_delay.ns) + 1;
    outcome.extra_delay = Duration{static_cast<int64_t>(prng.below(span))};
    ++stats.reordered;
  }
  return outcome;
}

FaultAction FaultAction::set_faults(Scope scope, LinkFaults faults) {
  FaultAction action;
  action.kind = Kind::kSetFaults;
  action.scope = scope;
  action.faults = faults;
  return action;
}

FaultAction FaultAction::set_up(Scope scope, bool up) {
  FaultAction action;
  action.kind = Kind::kSetUp;
  action.scope = scope;
  action.on = up;
  return action;
}

FaultAction FaultAction::path_fault(const PathFault& path) {
  MRC_ASSERT(path.loss >= 0 && path.loss <= 1);
  FaultAction action;
  action.kind = Kind::kPathFault;
  action.scope = Scope::of_plane(path.plane);
  action.path = path;
  return action;
}

FaultAction FaultAction::nic_drop(const NicDrop& nic) {
  MRC_ASSERT(nic.rx >= 0 && nic.rx <= 1 && nic.tx >= 0 && nic.tx <= 1);
  FaultAction action;
  action.kind = Kind::kNicDrop;
  action.nic = nic;
  return action;
}

FaultAction FaultAction::start_flap(Scope scope, FlapSpec flap) {
  FaultAction action;
  action.kind = Kind::kFlap;
  action.scope = scope;
  action.flap = flap;
  return action;
}

FaultAction FaultAction::heal_all() {
  return FaultAction{};
}

FaultAction FaultAction::set_rate(Scope scope, double fraction) {
  MRC_ASSERT(fraction > 0 && fraction <= 1);
  FaultAction action;
  action.kind = Kind::kSetRate;
  action.scope = scope;
  action.rate_fraction = fraction;
  return action;
}

}  // namespace mrc::sim
