// The OCP MRC controller API (mrc_ctl.h) over the engine of this process's devices.
#include "ocp/ctl.h"

#include <cerrno>

#include "ocp/ocp_internal.h"

namespace mrc::ocp {

void ctl_after_progress(Nic& nic) { (void)nic; }

int ctl_apply_ev_profile(Nic& nic, uint64_t id, QpConfig& config) {
  (void)config;
  auto it = nic.ev_profiles.find(id);
  if (it == nic.ev_profiles.end() || it->second.state != MRC_CTL_PROFILE_ONLINE) return EINVAL;
  return 0;
}

int ctl_apply_cc_profile(Nic& nic, uint64_t id, QpConfig& config) {
  (void)config;
  auto it = nic.cc_profiles.find(id);
  if (it == nic.cc_profiles.end() || it->second.state != MRC_CTL_PROFILE_ONLINE) return EINVAL;
  return 0;
}

void ctl_qp_connected(Nic& nic, mrc_qp& qp) {
  (void)nic;
  (void)qp;
}

}  // namespace mrc::ocp
