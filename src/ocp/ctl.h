// Controller hooks used by the rest of lib_mrc.so (see ctl.cc).
#pragma once

#include "ocp/objects.h"

namespace mrc::ocp {

// When the device opens, before its progress threads start: the controller's defaults (EV
// profile 0, which rounds read).
void ctl_open(Nic& nic);
// Holding shard s's lock after each of its rounds: EV state changes of its QPs become EV events.
void ctl_after_progress(Nic& nic, uint32_t s);
// Applies an ONLINE EV / CC profile to the configuration of a QP in shard `s` (errno value, 0 =
// applied). REQUIRES: Nic::lock_all.
int ctl_apply_ev_profile(Nic& nic, uint64_t id, uint32_t s, QpConfig& config);
int ctl_apply_cc_profile(Nic& nic, uint64_t id, QpConfig& config);
// After a QP reaches RTR: EVs the profile denies are denied in its EV set.
void ctl_qp_connected(Nic& nic, mrc_qp& qp);

}  // namespace mrc::ocp
