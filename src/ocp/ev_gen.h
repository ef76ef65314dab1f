// Generated EV profiles (OCP EV mode GEN): the controller gives field rules, the device draws
// the EVs. In EV format mode UDP an EV is a UDP source port (at most 16 bits), so:
//   - a field has a width, an initial value and a mask; a drawn value r in [min_val, max_val]
//     (at most popcount(mask) bits) is laid over the initial value, its bits most significant
//     first, at the positions the mask sets (the OCP expansion rule);
//   - fields are concatenated, the first most significant, into one value: the source port;
//   - a port belongs to the plane whose EV source-port range holds it; draws that land in no
//     plane's range are drawn again (bounded), and planes are filled evenly while they can be.
// In EV format mode SRV6 an EV is an address (ev_srv6.h): each field's value fills its format
// field (right-aligned there, format fields one after the other from the address's first bit),
// and the EV belongs to the plane whose locator block it carries.
// The draw is seeded (device and profile), so the same rules give the same EVs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mrc_ctl.h"

namespace mrc::ocp {

inline constexpr int kMaxEvFields = 8;

// "" if the rules are acceptable (each field within its width, max within the mask's bits,
// min <= max, a field at most `field_bits` wide and all at most `total_bits`), else what is
// wrong. UDP: 16 and 16; SRV6: 32 and the format's width.
std::string check_ev_fields(const std::vector<mrc_ctl_ev_field>& fields, uint32_t field_bits = 16,
                            uint32_t total_bits = 16);

// One field laid out: init_val with r's bits deposited (most significant first) into mask's bits.
uint32_t expand_ev_field(const mrc_ctl_ev_field& field, uint32_t r);

struct PortRange {
  uint32_t first = 0;  // plane p (0-based) owns [first, first + count)
  uint32_t count = 0;
};

// `count` EVs (port in val[0..1], big-endian; port = plane + 1) drawn from the rules, or an
// empty vector if the rules cannot reach any plane's ports.
std::vector<mrc_ctl_ev> generate_evs(const std::vector<mrc_ctl_ev_field>& fields, uint32_t count,
                                     const std::vector<PortRange>& planes, uint64_t seed);

// `count` address EVs (SRV6) drawn from the rules into the format's fields (`fmt_widths`, one
// per rule at least), each given to the plane `plane_of` names (-1: none, drawn again); empty
// if the rules reach no plane.
std::vector<mrc_ctl_ev> generate_address_evs(const std::vector<mrc_ctl_ev_field>& fields,
                                             const std::vector<uint32_t>& fmt_widths,
                                             uint32_t count, size_t planes,
                                             const std::function<int(const mrc_ctl_ev&)>& plane_of,
                                             uint64_t seed);

}  // namespace mrc::ocp
