// The oracle path policy (oracle_policy.h).
#include "sim/oracle_policy.h"

#include "core/ev_set.h"

namespace mrc::sim {

double OraclePolicy::weight_of(const void* context, uint16_t slot) {
  const auto& c = *static_cast<const Context*>(context);
  const EvSet::Slot& s = c.evs->slot(slot);
  return c.self->fabric_.path_health(c.self->src_, c.self->dst_, s.plane, s.ev);
}

uint16_t OraclePolicy::choose(const EvSet& evs, PlaneId plane, uint16_t candidate, uint16_t avoid) {
  const Context context{this, &evs};
  return credits_.pick(evs, plane, candidate, avoid, &OraclePolicy::weight_of, &context);
}

PathPolicy::Verdict OraclePolicy::judge_loss(const EvSet& evs, uint16_t slot, PlaneId plane) {
  const Ev ev = evs.slot(slot).ev;
  return fabric_.path_health(src_, dst_, plane, ev) < 1 ? Verdict::kStrike : Verdict::kSkip;
}

}  // namespace mrc::sim
