// Controller hooks used by the rest of lib_mrc.so (see ctl.cc).
#pragma once

#include "ocp/objects.h"

namespace mrc::ocp {

// Under Nic::mutex after each progress round: EV state changes become EV events.
void ctl_after_progress(Nic& nic);
// Applies an ONLINE EV / CC profile to a QP's configuration (errno value, 0 = applied).
int ctl_apply_ev_profile(Nic& nic, uint64_t id, QpConfig& config);
int ctl_apply_cc_profile(Nic& nic, uint64_t id, QpConfig& config);
// After a QP reaches RTR: EVs the profile denies are denied in its EV set.
void ctl_qp_connected(Nic& nic, mrc_qp& qp);

}  // namespace mrc::ocp
