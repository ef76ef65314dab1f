// STEV EVs of the OCP controller API (EV format mode STEV): an EV in the UDP source port and
// the IPv6 flow label.
//
// mrc_ctl.h has STEV's EV "spread across IPv6 flow label + UDP src port", its value in the
// first 4 bytes. mrc's layout: a format's fields are packed from the most significant bit of
// val[0] on (as OCP's ev_expansion example packs them); the first 16 bits are the UDP source
// port (val[0..1], big-endian), which must be one of the plane's EV source ports, and the next
// 16 (val[2..3]) the flow label (a 20-bit field whose top 4 bits stay zero). A UDP-mode EV is
// thus the STEV EV of flow label 0, and OCP's 16-bit STEV formats name source ports alone.
//
// The engine's EV is the source port; the datapath sends that port's packets with the EV's
// label (io::UdpHost::set_port_flow_label), set when a profile listing the EV goes ONLINE. A
// port carries one label at a time, for every QP of the device: two EVs with the same port and
// different labels cannot both be in ONLINE profiles (EINVAL when the second goes ONLINE).
// Switches that hash the flow label (IPv6 ECMP on L3 fields) then spread EVs of one source
// port over paths. STEV needs every plane of the device to be IPv6; format fields 1 to 32 bits
// in all (E2BIG beyond).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mrc/error.hpp"
#include "mrc/result.hpp"
#include "mrc_ctl.h"

namespace mrc::ocp {

struct Nic;

// "" if a STEV format profile may have these fields, else why not (E2BIG).
std::string check_stev_format(const std::vector<mrc_ctl_ev_fmt_field>& fields);
// "" if `nic`'s planes take STEV format profiles, else why not (EINVAL).
std::string stev_device_problem(const Nic& nic);

// The flow label of a STEV EV (its source port: ev_source_port, objects.h).
uint32_t stev_label(const mrc_ctl_ev& ev);
// "" if `ev` is a STEV EV of this device (its port a plane, its source port one of that
// plane's, bytes 4-31 zero), else why not.
std::string check_stev_ev(const Nic& nic, const mrc_ctl_ev& ev);
// Gives each EV's source port its label, or none of them: refused when a port would carry two
// labels, among `evs` or against an ONLINE profile's EVs (other than profile `id`'s).
Result<Ok, Error> stev_bind_all(Nic& nic, uint64_t id, const std::vector<mrc_ctl_ev>& evs);
// The EV (STEV form) of source port `port` of `plane`: the port and its label now.
mrc_ctl_ev stev_ev_of_port(const Nic& nic, int plane, uint16_t port);

}  // namespace mrc::ocp
