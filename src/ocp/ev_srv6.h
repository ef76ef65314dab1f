// SRv6 EVs of the OCP controller API (EV format mode SRV6): an EV that carries its path.
//
// In format mode UDP an EV is one of the device's EV source ports. In mode SRV6 it is an
// address, as mrc_ctl.h says (val[0..15]; val[16..31], an SRH segment, stays zero: the udp
// datapath sends no SRH): the plane's locator block (32 bits), then the uSIDs of the path
// (wire/srv6.h), then zeros. Its port is its plane, whose locator must carry that block.
//
// The engine's EVs stay source ports, so each SRv6 EV a profile names is bound to one EV
// source port of its plane (Nic::srv6_ports): a port already on that path and bound to no
// other EV if there is one, else the lowest unbound port, whose path the datapath then sets
// (io::UdpHost::set_port_path). A binding lasts as long as the device; an EV names one path for
// every QP of the device, as in mode UDP. Both ends of a connection map a port to a path alike
// when the controller gives them the same EVs (the MRC paper's symmetric EVs), so SACKs return
// on their data's path; otherwise they return on a path of the port's own.
//
// Format profiles in mode SRV6 are accepted on SRv6 devices only (srv6=: IPv6 planes, UDP
// checksum zero). Their fields sum to the block and whole uSIDs of one address: 48 to 128 bits;
// wider (an SRH segment too) is E2BIG.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mrc/error.hpp"
#include "mrc/result.hpp"
#include "mrc_ctl.h"

namespace mrc::ocp {

struct Nic;

// "" if an SRV6 format profile may have these fields, else why not (E2BIG).
std::string check_srv6_format(const std::vector<mrc_ctl_ev_fmt_field>& fields);
// "" if `nic`'s planes take SRV6 format profiles, else why not (EINVAL).
std::string srv6_device_problem(const Nic& nic);

// The path an SRv6 EV names on its plane, or why it names none.
Result<std::vector<uint16_t>, Error> srv6_ev_path(const Nic& nic, const mrc_ctl_ev& ev);
// The EV source port bound to the EV (`bind`: binding one now if there is none). Refused: an
// EV that names no path, a plane without a free port, a peer without room for the path.
Result<uint16_t, Error> srv6_ev_port(Nic& nic, const mrc_ctl_ev& ev, bool bind);
// Binds every EV of `evs` (unpopulated ones skipped), or none of them.
Result<Ok, Error> srv6_bind_all(Nic& nic, const std::vector<mrc_ctl_ev>& evs);
// The EV (address form) of EV source port `port` of `plane`: its path as the datapath has it.
mrc_ctl_ev srv6_ev_of_port(const Nic& nic, int plane, uint16_t port);
// The plane whose locator block `ev` carries, or -1.
int srv6_plane_of(const Nic& nic, const mrc_ctl_ev& ev);

}  // namespace mrc::ocp
