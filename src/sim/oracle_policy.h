// The oracle: a path policy that knows the fabric's faults, the upper bound the learned
// policies are measured against (weighted ECMP that knows the fault, issue and
// ../shared/reference/learned-paths.md). Simulator only: it reads each EV's path from the
// fabric at the moment of the choice.
//
// An EV's weight is its path's health now: 0 if a link on it is down, if a link on it loses
// packets, or if an EV path fault (blackhole, gray path) matches it; otherwise the slowest
// link's share of its configured rate (a link at 1/4 gives 0.25). The plane's packets are
// spread in proportion to the weights (SprayCredits), so a degraded path carries its share and
// a lossy or dead one none, from the first packet of the fault to its last. A NIC's drop is
// the same for every EV of its plane and does not enter the weight. A loss on a healthy path
// (congestion, a NIC's drop) only SKIPs the EV; one on a faulty path strikes as under the
// rules. Timeouts retire EVs as for every policy.
#pragma once

#include <cstdint>

#include "core/path_policy.h"
#include "sim/fabric.h"

namespace mrc::sim {

class OraclePolicy final : public PathPolicy {
 public:
  // The policy of a QP that sends from `src` to `dst`.
  OraclePolicy(const Fabric& fabric, HostId src, HostId dst, size_t slots)
      : fabric_(fabric), src_(src), dst_(dst), credits_(slots) {}
  uint16_t choose(const EvSet& evs, PlaneId plane, uint16_t candidate, uint16_t avoid) override;
  Verdict judge_loss(const EvSet& evs, uint16_t slot, PlaneId plane) override;
  size_t state_bytes() const override { return sizeof(*this) + credits_.state_bytes(); }

 private:
  struct Context {
    const OraclePolicy* self;
    const EvSet* evs;
  };
  static double weight_of(const void* context, uint16_t slot);

  const Fabric& fabric_;
  HostId src_;
  HostId dst_;
  SprayCredits credits_;
};

}  // namespace mrc::sim
