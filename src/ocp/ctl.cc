// The OCP MRC controller API (mrc_ctl.h) acting on the engine of this process's devices.
//
// mrc's EVs are UDP source ports (EV format mode UDP): an EV value holds the port in its first
// two bytes, big-endian, and the EV's port (1-based) is its plane. Every QP of a device uses
// the same source ports for the same EV slots, so an EV names one path for all QPs.
//   - EV profiles: AUTO mode (the engine picks EVs; the profile sets how many and the floor of
//     active ones). Profile 0 always exists, ONLINE, and holds every QP created without
//     MRC_QP_EV_PROFILE_ID. MODIFY_EV_STATE denies or allows an EV in every QP of the profile
//     (and in QPs that connect later); QUERY_EV_STATE / QUERY_EV_ARRAY read the engine's states.
//   - CC profiles: "uet-1.0-nscc" parameters map onto NsccConfig; no algorithm = fixed window.
//     Profile 0 always exists, ONLINE and fixed: the configuration a QP has without
//     MRC_QP_CC_PROFILE_ID (NSCC with the datapath's defaults), which giving a QP profile 0
//     restores.
//   - EV events: the progress thread compares EV states after each round; changes to
//     ASSUMED_BAD or back to GOOD matching a profile's event mask go to every EV event CQ.
//   - Ports: admin down takes the plane out exactly as a link failure does.
//   - EV probes: connectionless endpoint requests "EV probe" (QPN 0, Endpoint::prober) sent on
//     exactly the EV asked for, to any IPv4 host; its endpoint answers whether or not a QP
//     joins us, and the engine measures the RTT.
//   - Every EV state change is also logged for `mrcctl watch` (Nic::watch_log).
//   - Explicit EV profiles (mode EXP): INIT -> OFFLINE creates ev_count unpopulated entries;
//     REPLACE_EV fills them (while OFFLINE) with EVs the device can send: value = one of the
//     plane's EV source ports, port = the plane; ONLINE needs every entry populated. A QP of the
//     profile then uses exactly those EVs (QpConfig::ev_list), copies as weights.
//   - Generated EV profiles (mode GEN): field rules (EV_FIELDS_OP, ev_gen.h) set while OFFLINE;
//     the move ONLINE draws ev_count EVs from them (seeded), which QPs then use as a list.
// Refused: REPLACE_EV on AUTO and GEN profiles, field rules on AUTO and EXP profiles, port
// status update requests (the engine sends its own): EOPNOTSUPP. As mrc_ctl.h says: a profile's
// moves follow its life cycle INIT -> OFFLINE -> ONLINE -> OFFLINE -> INIT; EV and EV format
// profiles move OFFLINE only with a MODE given since they were INIT, a format profile ONLINE
// only with fields; EV operations that change EVs need a configured profile (not INIT, nor one
// never created) and EVs the device can send; else EINVAL. A refused call changes and creates
// nothing (it runs on a copy of the profile), but for an EV operation's entries before the one
// that failed, which took effect.
#include "ocp/ctl.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "io/socket_address.h"
#include "mrc/mrc.hpp"
#include "ocp/ctl_remote.h"
#include "ocp/ev_gen.h"
#include "ocp/ev_srv6.h"
#include "ocp/ev_stev.h"
#include "ocp/ocp_internal.h"

using namespace mrc;
using namespace mrc::ocp;

namespace {

const char* const kAlgorithms[] = {"uet-1.0-nscc", nullptr};

bool ok_ctx(const mrc_context* c) {
  return valid(c);
}

// A requested profile state; an unknown value maps to one no transition accepts (EINVAL).
mrc_ctl_profile_state profile_state(const mrc_ctl_profile_state& requested) {
  const int64_t v = raw(requested);
  return v >= MRC_CTL_PROFILE_INIT && v <= MRC_CTL_PROFILE_ONLINE
             ? static_cast<mrc_ctl_profile_state>(v)
             : static_cast<mrc_ctl_profile_state>(3);
}

// The moves of a profile's life cycle: INIT -> OFFLINE -> ONLINE -> OFFLINE -> INIT.
bool lifecycle_allows(mrc_ctl_profile_state from, mrc_ctl_profile_state to) {
  return (from == MRC_CTL_PROFILE_INIT && to == MRC_CTL_PROFILE_OFFLINE) ||
         (from == MRC_CTL_PROFILE_OFFLINE &&
          (to == MRC_CTL_PROFILE_INIT || to == MRC_CTL_PROFILE_ONLINE)) ||
         (from == MRC_CTL_PROFILE_ONLINE && to == MRC_CTL_PROFILE_OFFLINE);
}

EvProfile& profile0(Nic& nic) {
  EvProfile& p = nic.ev_profiles[0];
  if (p.state == MRC_CTL_PROFILE_INIT) p.state = MRC_CTL_PROFILE_ONLINE;
  return p;
}

// The congestion control a QP of this device has without a CC profile (io::Device::configure:
// the same in every shard).
QpConfig default_cc(Nic& nic) {
  QpConfig c;
  nic.shard(0).configure(c);
  return c;
}

// CC profile 0, the default (see the abstract): made ONLINE on first use, reporting as its
// config the NSCC parameters of default_cc.
CcProfile& cc_profile0(Nic& nic) {
  CcProfile& p = nic.cc_profiles[0];
  if (p.state != MRC_CTL_PROFILE_INIT) return p;
  const NsccConfig n = default_cc(nic).nscc;
  p.state = MRC_CTL_PROFILE_ONLINE;
  p.algorithm = kAlgorithms[0];
  p.has_config = true;
  p.nscc = mrc_ctl_cc_nscc_cfg{};
  p.nscc.disable_qa = n.quick_adapt ? 0 : 1;
  p.nscc.base_rtt = static_cast<uint32_t>(n.base_rtt_ns);
  p.nscc.eta = static_cast<float>(n.proportional_gain);
  p.nscc.fi = static_cast<float>(n.fair_increase_mtus);
  p.nscc.gamma = static_cast<float>(n.decrease_gain);
  p.nscc.max_md_jump = static_cast<float>(n.max_decrease);
  p.nscc.max_cwnd = static_cast<uint32_t>(n.max_window_bytes);
  p.nscc.qa_gate = n.qa_gate;
  p.nscc.qa_threshold = static_cast<uint32_t>(n.qa_threshold_ns);
  p.nscc.target_delay = static_cast<uint32_t>(n.target_delay_ns);
  return p;
}

mrc_ctl_ev_state to_ctl(EvState s) {
  switch (s) {
    case EvState::kGood:
    case EvState::kSkip:
      return MRC_CTL_EV_GOOD;
    case EvState::kAssumedBad:
      return MRC_CTL_EV_ASSUMED_BAD;
    case EvState::kDenied:
      return MRC_CTL_EV_DENIED;
  }
  return MRC_CTL_EV_UNKNOWN;
}

// A slot of a QP in a shard whose EV source ports are `offset` past the device's, as the
// controller names it: by the device's port for the slot.
mrc_ctl_ev port_ev(const EvSet::Slot& s, int offset) {
  mrc_ctl_ev ev{};
  const auto port = static_cast<uint16_t>(static_cast<int>(s.ev.value) - offset);
  ev.val[0] = static_cast<uint8_t>(port >> 8);
  ev.val[1] = static_cast<uint8_t>(port);
  ev.port = static_cast<uint8_t>(s.plane.value + 1);
  return ev;
}

uint16_t find_port_slot(const EvSet& evs, uint16_t port, uint8_t plane) {
  for (size_t k = 0; k < evs.size(); ++k) {
    const auto i = static_cast<uint16_t>(k);
    if (evs.slot(i).ev.value == port && evs.slot(i).plane.value + 1 == plane) return i;
  }
  return EvSet::kNoSlot;
}

template <typename F>
void for_each_profile_qp(Nic& nic, uint64_t id, F&& f) {
  for (mrc_context* c : nic.contexts)
    for (mrc_qp* qp : c->qp_list)
      if ((qp->has_ev_profile ? qp->ev_profile : 0) == id && qp->placed.qp->evs() != nullptr)
        f(*qp);
}

// The EV format of a profile's EVs: format profile 0 is the device's own (UDP source ports).
mrc_ctl_ev_fmt_mode format_of(const Nic& nic, uint64_t fmt_id) {
  return ev_format_of(nic.ev_fmt_profiles, fmt_id);
}

bool srv6_evs(const Nic& nic, const EvProfile& p) {
  return format_of(nic, p.fmt_id) == MRC_CTL_EV_FMT_MODE_SRV6;
}

bool stev_evs(const Nic& nic, const EvProfile& p) {
  return format_of(nic, p.fmt_id) == MRC_CTL_EV_FMT_MODE_STEV;
}

// SRV6 and STEV EVs are the format's fields packed from val[0]'s first bit (ev_srv6.h,
// ev_stev.h); UDP ones a source port.
bool packed_evs(const Nic& nic, const EvProfile& p) {
  return srv6_evs(nic, p) || stev_evs(nic, p);
}

// An engine EV of a QP in shard `shard` as the controller sees it: the device's source port for
// it, or in mode SRV6 an address (SRV6 and STEV EVs: one shard only).
mrc_ctl_ev make_ev(Nic& nic, const EvProfile& p, uint32_t shard, const EvSet::Slot& s) {
  const auto port = static_cast<uint16_t>(s.ev.value);
  if (srv6_evs(nic, p)) return srv6_ev_of_port(nic, s.plane.value, port);
  if (stev_evs(nic, p)) return stev_ev_of_port(nic, s.plane.value, port);
  return port_ev(s, nic.ev_port_offset(shard));
}

// The slot of a controller EV in the EVs of a QP in shard `shard`, or kNoSlot.
uint16_t find_slot(Nic& nic, const EvProfile& p, uint32_t shard, const EvSet& evs,
                   const mrc_ctl_ev& ev) {
  if (!srv6_evs(nic, p))  // UDP, STEV: the port in the QP's shard
    return find_port_slot(
        evs, static_cast<uint16_t>(ev_source_port(ev) + nic.ev_port_offset(shard)), ev.port);
  const auto port = srv6_ev_port(nic, ev, false);
  return port.ok() ? find_port_slot(evs, port.value(), ev.port) : EvSet::kNoSlot;
}

// A format profile an EV profile may name: 0, or one configured (past INIT).
bool usable_format(const Nic& nic, uint64_t id) {
  if (id == 0) return true;
  auto it = nic.ev_fmt_profiles.find(id);
  return it != nic.ev_fmt_profiles.end() && it->second.state != MRC_CTL_PROFILE_INIT;
}

std::string ev_text(const mrc_ctl_ev& ev) {
  return io::address_text(io::SocketAddress::ipv6(ev_address(ev), 0)) + " (port " +
         std::to_string(ev.port) + ")";
}

// Bad controller input the errno alone would not explain: said once on stderr, naming the
// field, and returned as the errno value.
int refuse(int error, const std::string& why) {
  std::fprintf(stderr, "mrc: controller: %s\n", why.c_str());
  return error;
}

bool same_ev(const mrc_ctl_ev& a, const mrc_ctl_ev& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

bool is_unpopulated(const mrc_ctl_ev& ev) {
  return ev_unpopulated(ev);
}

// An EV this device can send: port = a plane, value = one of that plane's EV source ports
// (first two bytes, big-endian), every other byte zero.
bool valid_port_ev(const Nic& nic, const mrc_ctl_ev& ev) {
  const size_t planes = nic.spec->planes.size();
  if (ev.port < 1 || ev.port > planes) return false;
  for (size_t i = 2; i < sizeof ev.val; ++i)
    if (ev.val[i] != 0) return false;
  const PortRange range = plane_ev_ports(*nic.spec, ev.port - 1);
  return ev_source_port(ev) - range.first < range.count;
}

// The width of a format profile's EVs in bits (the fields' sum; format 0 and one without
// fields: a source port's 16).
uint32_t format_bits(const Nic& nic, uint64_t fmt_id) {
  auto it = nic.ev_fmt_profiles.find(fmt_id);
  if (fmt_id == 0 || it == nic.ev_fmt_profiles.end() || it->second.fields.empty()) return 16;
  uint32_t bits = 0;
  for (const auto& f : it->second.fields) bits += f.width;
  return bits;
}

// 0 if QPs of the profile can send `ev`, else EINVAL (for an SRv6 EV, saying why).
int check_ev(const Nic& nic, const EvProfile& p, const mrc_ctl_ev& ev) {
  if (!packed_evs(nic, p)) return valid_port_ev(nic, ev) ? 0 : EINVAL;
  if (stev_evs(nic, p)) {
    if (const std::string bad = check_stev_ev(nic, ev); !bad.empty()) return refuse(EINVAL, bad);
  } else if (auto path = srv6_ev_path(nic, ev); !path.ok()) {
    return refuse(EINVAL, path.error().message);
  }
  const uint32_t bits = format_bits(nic, p.fmt_id);
  for (uint32_t b = bits; b < 128; ++b)
    if ((ev.val[b / 8] >> (7 - b % 8)) & 1)
      return refuse(EINVAL, "EV " + ev_text(ev) + ": bits past the EV format's " +
                                std::to_string(bits) + " must be zero");
  return 0;
}

// EXP and GEN profiles hold an EV array (QpConfig::ev_list for their QPs); AUTO ones do not.
bool has_list(const EvProfile& p) {
  return p.mode != MRC_CTL_EV_MODE_AUTO;
}

std::vector<PortRange> plane_ranges(const Nic& nic) {
  std::vector<PortRange> out;
  for (size_t p = 0; p < nic.spec->planes.size(); ++p)
    out.push_back(plane_ev_ports(*nic.spec, static_cast<int>(p)));
  return out;
}

mrc_ctl_ev_state listed_state(const EvProfile& p, const mrc_ctl_ev& ev) {
  if (is_unpopulated(ev)) return MRC_CTL_EV_UNKNOWN;
  for (const mrc_ctl_ev_op_entry& d : p.evs)
    if (same_ev(d.ev, ev)) return MRC_CTL_EV_DENIED;
  return MRC_CTL_EV_GOOD;
}

bool listed(const EvProfile& p, const mrc_ctl_ev& ev) {
  return std::any_of(p.list.begin(), p.list.end(),
                     [&](const mrc_ctl_ev& x) { return same_ev(x, ev); });
}

// DENIED or GOOD for an EV the profile's QPs can send (check_ev, else EINVAL), in the profile
// and every QP of it.
int ev_modify_state(Nic& nic, uint64_t id, EvProfile& p, const mrc_ctl_ev_op_entry& e) {
  if (raw(e.state) != MRC_CTL_EV_DENIED && raw(e.state) != MRC_CTL_EV_GOOD) return EINVAL;
  if (int bad = check_ev(nic, p, e.ev)) return bad;
  if (has_list(p) && p.state == MRC_CTL_PROFILE_ONLINE && !listed(p, e.ev)) return ENOENT;
  const bool deny = e.state == MRC_CTL_EV_DENIED;
  std::erase_if(p.evs, [&](const mrc_ctl_ev_op_entry& x) { return same_ev(x.ev, e.ev); });
  if (deny) p.evs.push_back(e);
  for_each_profile_qp(nic, id, [&](mrc_qp& qp) {
    const uint16_t slot = find_slot(nic, p, qp.placed.shard, *qp.placed.qp->evs(), e.ev);
    if (slot != EvSet::kNoSlot) qp.placed.qp->evs()->set_denied(slot, deny);
  });
  return 0;
}

// REPLACE_EV on an explicit profile that is OFFLINE (this device does not advertise
// MRC_CTL_OPT_CAP_EV_PROFILE_MODIFY_ONLINE): the first (or every) copy of `ev` becomes `ev_new`.
int ev_replace(const Nic& nic, EvProfile& p, const mrc_ctl_ev_op_entry& e) {
  if (p.mode != MRC_CTL_EV_MODE_EXP)
    return EOPNOTSUPP;  // AUTO: the engine picks; GEN: the rules do
  if (p.state != MRC_CTL_PROFILE_OFFLINE) return p.state == MRC_CTL_PROFILE_ONLINE ? EBUSY : EINVAL;
  if (int bad = check_ev(nic, p, e.ev_new)) return bad;
  if (raw(e.state) != 0 && raw(e.state) != MRC_CTL_EV_GOOD && raw(e.state) != MRC_CTL_EV_DENIED)
    return EINVAL;
  bool found = false;
  for (mrc_ctl_ev& x : p.list) {
    if (!same_ev(x, e.ev) || (found && !(e.flags & MRC_CTL_EV_OP_F_ALL_COPIES))) continue;
    x = e.ev_new;
    found = true;
  }
  if (!found) return ENOENT;
  std::erase_if(p.evs, [&](const mrc_ctl_ev_op_entry& x) { return same_ev(x.ev, e.ev_new); });
  if (e.state == MRC_CTL_EV_DENIED)
    p.evs.push_back(mrc_ctl_ev_op_entry{e.ev_new, {}, MRC_CTL_EV_DENIED, 0});
  return 0;
}

// `qp`: a connected QP of the profile, or null.
int ev_query_state(Nic& nic, const mrc_qp* qp, const EvProfile& p, mrc_ctl_ev_op_entry& e) {
  if (qp == nullptr) {
    if (!has_list(p) || !listed(p, e.ev) || is_unpopulated(e.ev)) return ENOENT;
    e.state = listed_state(p, e.ev);
    return 0;
  }
  const EvSet* evs = qp->placed.qp->evs();
  const uint16_t slot = find_slot(nic, p, qp->placed.shard, *evs, e.ev);
  if (slot == EvSet::kNoSlot) return ENOENT;
  e.state = to_ctl(evs->slot(slot).state);
  return 0;
}

// The EV array: an explicit profile's list (copies included, states from a connected QP if
// there is one); an AUTO profile's EVs as a connected QP of the profile uses them.
int ev_query_array(Nic& nic, const mrc_qp* qp, const EvProfile& p, mrc_ctl_ev_profile_attr& a) {
  auto& op = a.ev_op;
  const EvSet* evs = qp != nullptr ? qp->placed.qp->evs() : nullptr;
  const uint32_t shard = qp != nullptr ? qp->placed.shard : 0;
  const bool exp = has_list(p);
  const int n = exp              ? static_cast<int>(p.list.size())
                : evs != nullptr ? static_cast<int>(evs->size())
                                 : 0;
  if (op.entry_count < n) {
    op.entry_count = n;
    return n == 0 ? 0 : E2BIG;
  }
  for (int i = 0; i < n; ++i) {
    if (exp) {
      const mrc_ctl_ev& ev = p.list[static_cast<size_t>(i)];
      const uint16_t slot = evs != nullptr && !is_unpopulated(ev)
                                ? find_slot(nic, p, shard, *evs, ev)
                                : EvSet::kNoSlot;
      const mrc_ctl_ev_state state =
          slot != EvSet::kNoSlot ? to_ctl(evs->slot(slot).state) : listed_state(p, ev);
      op.entries[i] = mrc_ctl_ev_op_entry{ev, {}, state, 0};
    } else {
      const EvSet::Slot& s = evs->slot(static_cast<uint16_t>(i));
      op.entries[i] = mrc_ctl_ev_op_entry{make_ev(nic, p, shard, s), {}, to_ctl(s.state), 0};
    }
  }
  op.entry_count = n;
  return 0;
}

int ev_op(Nic& nic, uint64_t id, EvProfile& p, mrc_ctl_ev_profile_attr& a, bool modify) {
  auto& op = a.ev_op;
  if (op.entry_count < 0 || (op.entry_count > 0 && op.entries == nullptr)) return EINVAL;
  if (raw(op.op) == MRC_CTL_EV_OP_REPLACE_EV || raw(op.op) == MRC_CTL_EV_OP_MODIFY_EV_STATE) {
    // A profile in INIT (just created by this call, or not configured) has no EVs to change.
    if (!modify || p.state == MRC_CTL_PROFILE_INIT) return EINVAL;
    for (int i = 0; i < op.entry_count; ++i) {  // stops at the first failing entry, as OCP says
      const int e = raw(op.op) == MRC_CTL_EV_OP_REPLACE_EV
                        ? ev_replace(nic, p, op.entries[i])
                        : ev_modify_state(nic, id, p, op.entries[i]);
      if (e != 0) return e;
    }
    return 0;
  }
  const mrc_qp* first = nullptr;  // the first connected QP of the profile
  for_each_profile_qp(nic, id, [&](mrc_qp& qp) { first = first != nullptr ? first : &qp; });
  if (raw(op.op) == MRC_CTL_EV_OP_QUERY_EV_STATE) {
    for (int i = 0; i < op.entry_count; ++i)
      if (int e = ev_query_state(nic, first, p, op.entries[i])) return e;
    return 0;
  }
  if (raw(op.op) != MRC_CTL_EV_OP_QUERY_EV_ARRAY) return EINVAL;
  return ev_query_array(nic, first, p, a);
}

// EV field rules of a GEN profile: set while OFFLINE (checked against ev_gen.h's rules and the
// profile's EV format), read at any time.
int ev_fields_op(const Nic& nic, EvProfile& p, mrc_ctl_ev_profile_attr& a, bool modify) {
  auto& op = a.ev_fields_op;
  if (op.field_count < 0 || (op.field_count > 0 && op.fields == nullptr)) return EINVAL;
  if (raw(op.op) == MRC_CTL_EV_FIELDS_OP_QUERY_FIELDS) {
    const int n = static_cast<int>(p.fields.size());
    const bool room = op.field_count >= n;
    for (int i = 0; room && i < n; ++i) op.fields[i] = p.fields[static_cast<size_t>(i)];
    op.field_count = n;
    return room ? 0 : E2BIG;
  }
  if (raw(op.op) != MRC_CTL_EV_FIELDS_OP_MODIFY_FIELDS || !modify) return EINVAL;
  if (p.mode != MRC_CTL_EV_MODE_GEN) return EOPNOTSUPP;  // AUTO picks, EXP lists ports as they are
  if (p.state != MRC_CTL_PROFILE_OFFLINE) return p.state == MRC_CTL_PROFILE_ONLINE ? EBUSY : EINVAL;
  if (op.field_count > kMaxEvFields) return E2BIG;
  std::vector<mrc_ctl_ev_field> fields(op.fields, op.fields + op.field_count);
  const bool packed = packed_evs(nic, p);
  if (const std::string bad = packed ? check_ev_fields(fields, 32, format_bits(nic, p.fmt_id))
                                     : check_ev_fields(fields);
      !bad.empty())
    return packed ? refuse(EINVAL, "EV field rules: " + bad) : EINVAL;
  auto fmt = nic.ev_fmt_profiles.find(p.fmt_id);
  if (p.fmt_id != 0 && fmt != nic.ev_fmt_profiles.end() && !fmt->second.fields.empty()) {
    const auto& formats = fmt->second.fields;
    uint32_t width = 0;
    for (const auto& f : fields) width += f.width;
    if (fields.size() > formats.size() || width > format_bits(nic, p.fmt_id)) return EINVAL;
    for (size_t i = 0; packed && i < fields.size(); ++i)  // each value fills its format field
      if (fields[i].width > formats[i].width)
        return refuse(EINVAL, "EV field " + std::to_string(i) + " is wider than format field " +
                                  std::to_string(i) + " (" + std::to_string(formats[i].width) +
                                  " bits)");
  }
  p.fields = std::move(fields);
  return 0;
}

size_t distinct_evs(const std::vector<mrc_ctl_ev>& list) {
  size_t n = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    bool repeat = false;
    for (size_t j = 0; j < i && !repeat; ++j) repeat = same_ev(list[i], list[j]);
    n += repeat ? 0 : 1;
  }
  return n;
}

// OFFLINE -> ONLINE of a GEN profile: draw its EVs from the field rules (seeded by the device
// name and profile id, so the same rules give the same EVs).
int generate_list(const Nic& nic, uint64_t id, EvProfile& p) {
  if (p.fields.empty()) return EINVAL;
  uint64_t seed = id * 0x9E3779B97F4A7C15ull;
  for (char c : nic.spec->name) seed = (seed ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
  if (!packed_evs(nic, p)) {
    p.list = generate_evs(p.fields, p.count, plane_ranges(nic), seed);
    return p.list.empty() ? EINVAL : 0;  // the rules reach none of the device's source ports
  }
  std::vector<uint32_t> widths;
  for (const auto& f : nic.ev_fmt_profiles.at(p.fmt_id).fields) widths.push_back(f.width);
  const bool srv6 = srv6_evs(nic, p);
  const std::vector<PortRange> ranges = plane_ranges(nic);
  const auto plane_of = [&](const mrc_ctl_ev& drawn) {  // the plane its block or port names
    int plane = srv6 ? srv6_plane_of(nic, drawn) : -1;
    for (size_t k = 0; !srv6 && k < ranges.size(); ++k)
      if (ev_source_port(drawn) - ranges[k].first < ranges[k].count) plane = static_cast<int>(k);
    if (plane < 0 || !srv6) return plane;  // a STEV EV of a plane's port is valid (<= 32 bits)
    mrc_ctl_ev ev = drawn;
    ev.port = static_cast<uint8_t>(plane + 1);
    return srv6_ev_path(nic, ev).ok() ? plane : -1;
  };
  p.list = generate_address_evs(p.fields, widths, p.count, nic.spec->planes.size(), plane_of, seed);
  if (p.list.empty())
    return refuse(EINVAL, srv6 ? "SRv6 EV field rules draw no EV of this device: the first 32 bits "
                                 "must be a plane's locator block, then 1 to 5 non-zero uSIDs"
                               : "STEV EV field rules draw no EV of this device: the first 16 bits "
                                 "must be one of a plane's EV source ports");
  return 0;
}

// OFFLINE -> ONLINE of a profile of SRv6 or STEV EVs: each SRv6 EV bound to an EV source port
// (ev_srv6.h), each STEV EV's label put on its port (ev_stev.h); or none, and the profile stays
// OFFLINE.
int bind_packed_list(Nic& nic, uint64_t id, EvProfile& p) {
  if (p.mode == MRC_CTL_EV_MODE_AUTO)
    return refuse(EINVAL,
                  "EV profile " + std::to_string(id) +
                      ": an AUTO profile's EVs are the device's own source ports (EV "
                      "format 0 or a UDP one); SRv6 and STEV EVs come in EXP or GEN profiles");
  auto bound = srv6_evs(nic, p) ? srv6_bind_all(nic, p.list) : stev_bind_all(nic, id, p.list);
  if (bound.ok()) return 0;
  if (p.mode == MRC_CTL_EV_MODE_GEN) p.list.clear();
  return refuse(bound.error().code == Errc::kResourceExhausted ? ENOSPC : EINVAL,
                "EV profile " + std::to_string(id) + ": " + bound.error().message);
}

int ev_state_change(Nic& nic, uint64_t id, EvProfile& p, mrc_ctl_profile_state to) {
  if (to == p.state) return 0;
  if (!lifecycle_allows(p.state, to)) return EINVAL;
  if (p.state == MRC_CTL_PROFILE_INIT && !p.mode_set) return EINVAL;  // INIT -> OFFLINE needs MODE
  if (p.state == MRC_CTL_PROFILE_ONLINE && p.qps > 0) return EBUSY;
  if (to == MRC_CTL_PROFILE_ONLINE && p.count == 0) return EINVAL;
  if (to == MRC_CTL_PROFILE_ONLINE && p.mode == MRC_CTL_EV_MODE_EXP) {
    // Every entry must be replaced first, and the floor must be reachable.
    if (std::any_of(p.list.begin(), p.list.end(), is_unpopulated)) return EINVAL;
    if (p.min_active > distinct_evs(p.list)) return EINVAL;
    for (const mrc_ctl_ev& ev : p.list)  // the EV format may have changed since REPLACE_EV
      if (int bad = check_ev(nic, p, ev)) return bad;
  }
  if (to == MRC_CTL_PROFILE_ONLINE && p.mode == MRC_CTL_EV_MODE_GEN)
    if (int e = generate_list(nic, id, p)) return e;
  if (to == MRC_CTL_PROFILE_ONLINE && packed_evs(nic, p))
    if (int e = bind_packed_list(nic, id, p)) return e;
  if (to != MRC_CTL_PROFILE_ONLINE && p.mode == MRC_CTL_EV_MODE_GEN) p.list.clear();
  if (to == MRC_CTL_PROFILE_OFFLINE && p.state == MRC_CTL_PROFILE_INIT &&
      p.mode == MRC_CTL_EV_MODE_EXP)
    p.list.assign(p.count, mrc_ctl_ev{});  // INIT -> OFFLINE: the explicit array starts unpopulated
  if (to == MRC_CTL_PROFILE_INIT)
    p.mode_set = false;  // unconfigured again: the next move OFFLINE needs MODE
  p.state = to;
  return 0;
}

// MODE and COUNT: an explicit or generated profile takes any count up to 256 (each EV names
// its own plane);
// an AUTO profile's count is aligned down to the planes, so each plane gets the same share.
int ev_mode_count(EvProfile& p, const mrc_ctl_ev_profile_attr& a, int mask, int planes) {
  if (mask & MRC_CTL_EV_PROFILE_MODE) {
    const int64_t mode = raw(a.ev_mode);
    if (mode != MRC_CTL_EV_MODE_AUTO && mode != MRC_CTL_EV_MODE_EXP && mode != MRC_CTL_EV_MODE_GEN)
      return EINVAL;
    p.mode = static_cast<mrc_ctl_ev_mode>(mode);
    p.mode_set = true;
  }
  if (mask & MRC_CTL_EV_PROFILE_COUNT) {
    const bool exp = has_list(p);
    if (a.ev_count < (exp ? 1u : static_cast<uint32_t>(planes)) || a.ev_count > 256) return E2BIG;
    p.count = exp ? a.ev_count : a.ev_count / planes * planes;
  }
  if (p.state == MRC_CTL_PROFILE_OFFLINE && p.mode == MRC_CTL_EV_MODE_EXP &&
      p.list.size() != p.count)
    p.list.resize(p.count, mrc_ctl_ev{});  // a changed count: new entries start unpopulated
  if (p.mode == MRC_CTL_EV_MODE_AUTO ||
      (p.mode == MRC_CTL_EV_MODE_GEN && p.state != MRC_CTL_PROFILE_ONLINE))
    p.list.clear();
  if (p.mode != MRC_CTL_EV_MODE_GEN) p.fields.clear();
  return 0;
}

// Applies a modify call to `p`, a copy of profile `id` (the caller keeps it only if it took).
int modify_ev_profile(Nic& nic, uint64_t id, EvProfile& p, mrc_ctl_ev_profile_attr& a, int mask) {
  constexpr int kKnown =
      MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_FMT_ID |
      MRC_CTL_EV_PROFILE_COUNT | MRC_CTL_EV_PROFILE_MIN_ACTIVE | MRC_CTL_EV_PROFILE_EVENT_MASK |
      MRC_CTL_EV_PROFILE_EV_OP | MRC_CTL_EV_PROFILE_EV_FIELDS_OP | MRC_CTL_EV_PROFILE_VENDOR_CFG;
  if ((mask & ~kKnown) ||
      ((mask & MRC_CTL_EV_PROFILE_EV_OP) && (mask & MRC_CTL_EV_PROFILE_EV_FIELDS_OP)))
    return EINVAL;
  const bool online = p.state == MRC_CTL_PROFILE_ONLINE;
  const int planes = static_cast<int>(nic.spec->planes.size());
  if ((mask & (MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_FMT_ID | MRC_CTL_EV_PROFILE_COUNT |
               MRC_CTL_EV_PROFILE_MIN_ACTIVE)) &&
      (online || id == 0))
    return EBUSY;  // only an OFFLINE profile is reconfigured; profile 0 is fixed
  if ((mask & MRC_CTL_EV_PROFILE_EVENT_MASK) &&
      (a.ev_event_mask & ~(MRC_CTL_EV_GOOD | MRC_CTL_EV_ASSUMED_BAD)))
    return EINVAL;
  if ((mask & MRC_CTL_EV_PROFILE_FMT_ID) && !usable_format(nic, a.ev_fmt_profile_id)) return EINVAL;
  if (int e = ev_mode_count(p, a, mask, planes)) return e;
  if (mask & MRC_CTL_EV_PROFILE_MIN_ACTIVE) {
    if (a.ev_min_active < 1 || a.ev_min_active > p.count) return EINVAL;
    p.min_active = a.ev_min_active;
  }
  if (mask & MRC_CTL_EV_PROFILE_FMT_ID) p.fmt_id = a.ev_fmt_profile_id;
  if (mask & MRC_CTL_EV_PROFILE_EVENT_MASK) p.event_mask = a.ev_event_mask;
  if (mask & MRC_CTL_EV_PROFILE_EV_OP)  // before STATE: REPLACE_EV may come with the move ONLINE
    if (int e = ev_op(nic, id, p, a, true)) return e;
  // Field rules come with the move INIT -> OFFLINE (after it) or with the move ONLINE (before it).
  const bool fields_after = (mask & MRC_CTL_EV_PROFILE_STATE) && p.state == MRC_CTL_PROFILE_INIT;
  if ((mask & MRC_CTL_EV_PROFILE_EV_FIELDS_OP) && !fields_after)
    if (int e = ev_fields_op(nic, p, a, true)) return e;
  if (mask & MRC_CTL_EV_PROFILE_STATE)
    if (int e = ev_state_change(nic, id, p, profile_state(a.profile_state))) return e;
  if ((mask & MRC_CTL_EV_PROFILE_EV_FIELDS_OP) && fields_after)
    if (int e = ev_fields_op(nic, p, a, true)) return e;
  return 0;
}

int cc_modify(CcProfile& p, mrc_ctl_cc_profile_attr& a, int mask) {
  constexpr int kKnown = MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM |
                         MRC_CTL_CC_PROFILE_CONFIG | MRC_CTL_CC_PROFILE_VENDOR_CFG;
  if (mask & ~kKnown) return EINVAL;
  const bool online = p.state == MRC_CTL_PROFILE_ONLINE;
  if ((mask & (MRC_CTL_CC_PROFILE_ALGORITHM | MRC_CTL_CC_PROFILE_CONFIG)) && online) return EBUSY;
  if (mask & MRC_CTL_CC_PROFILE_ALGORITHM) {
    if (a.algorithm != nullptr && std::strcmp(a.algorithm, kAlgorithms[0]) != 0) return EINVAL;
    p.algorithm = a.algorithm != nullptr ? a.algorithm : "";
    p.has_config = false;
  }
  if (mask & MRC_CTL_CC_PROFILE_CONFIG) {
    if (p.algorithm.empty() || a.cc_config == nullptr) return EINVAL;
    const auto* c = static_cast<const mrc_ctl_cc_nscc_cfg*>(a.cc_config);
    if (c->max_cwnd != 0 && c->max_cwnd < 4096) return EINVAL;
    p.nscc = *c;
    p.has_config = true;
  }
  const mrc_ctl_profile_state to = profile_state(a.profile_state);
  if (!(mask & MRC_CTL_CC_PROFILE_STATE) || to == p.state) return 0;
  if (online && p.qps > 0) return EBUSY;
  if (to == MRC_CTL_PROFILE_ONLINE &&
      (p.state != MRC_CTL_PROFILE_OFFLINE || (!p.algorithm.empty() && !p.has_config)))
    return EINVAL;
  if (to == MRC_CTL_PROFILE_OFFLINE && p.state == MRC_CTL_PROFILE_INIT &&
      !(mask & MRC_CTL_CC_PROFILE_ALGORITHM))
    return EINVAL;
  if (to == MRC_CTL_PROFILE_INIT && p.state != MRC_CTL_PROFILE_OFFLINE) return EINVAL;
  p.state = to;
  return 0;
}

// An EV format profile: mode UDP (fields of 16 bits at most in all, a UDP source port) or, on
// an SRv6 device, SRV6 (check_srv6_format). INIT -> OFFLINE needs the MODE (given with the move
// or since the profile was INIT), OFFLINE -> ONLINE the fields; MODE and fields while ONLINE,
// and leaving ONLINE while an ONLINE EV profile uses it: EBUSY.
int fmt_mode(const Nic& nic, EvFmtProfile& p, const mrc_ctl_ev_fmt_profile_attr& a, uint64_t id) {
  const int64_t mode = raw(a.ev_fmt_mode);
  const std::string name = "EV format profile " + std::to_string(id);
  if (mode == MRC_CTL_EV_FMT_MODE_STEV) {
    if (const std::string problem = stev_device_problem(nic); !problem.empty())
      return refuse(EINVAL, name + ": mode STEV does not match the planes: " + problem);
  } else if (mode == MRC_CTL_EV_FMT_MODE_SRV6) {
    if (const std::string problem = srv6_device_problem(nic); !problem.empty())
      return refuse(EINVAL, name + ": mode SRV6 does not match the planes: " + problem);
  } else if (mode != MRC_CTL_EV_FMT_MODE_UDP) {
    return EINVAL;
  }
  if (mode != p.mode) p.fields.clear();  // fields are read in their mode's terms
  p.mode = static_cast<mrc_ctl_ev_fmt_mode>(mode);
  p.mode_set = true;
  return 0;
}

int fmt_fields(EvFmtProfile& p, const mrc_ctl_ev_fmt_profile_attr& a, uint64_t id) {
  const auto& op = a.ev_fmt_op;
  if (raw(op.op) != MRC_CTL_EV_FMT_OP_MODIFY_FIELDS || op.fmt_field_count < 1 ||
      op.fmt_fields == nullptr)
    return EINVAL;
  if (op.fmt_field_count > 16) return E2BIG;
  std::vector<mrc_ctl_ev_fmt_field> fields(op.fmt_fields, op.fmt_fields + op.fmt_field_count);
  if (p.mode == MRC_CTL_EV_FMT_MODE_SRV6 || p.mode == MRC_CTL_EV_FMT_MODE_STEV) {
    const std::string bad =
        p.mode == MRC_CTL_EV_FMT_MODE_SRV6 ? check_srv6_format(fields) : check_stev_format(fields);
    if (!bad.empty()) return refuse(E2BIG, "EV format profile " + std::to_string(id) + ": " + bad);
  } else {
    int width = 0;
    for (const auto& f : fields) width += f.width;
    if (width > 16) return E2BIG;  // a UDP source port
  }
  p.fields = std::move(fields);
  return 0;
}

bool fmt_in_use(const Nic& nic, uint64_t id) {
  return std::any_of(nic.ev_profiles.begin(), nic.ev_profiles.end(), [&](const auto& e) {
    return e.second.fmt_id == id && e.second.state == MRC_CTL_PROFILE_ONLINE;
  });
}

int fmt_modify(const Nic& nic, uint64_t id, EvFmtProfile& p, const mrc_ctl_ev_fmt_profile_attr& a,
               int mask) {
  if ((mask & (MRC_CTL_EV_FMT_PROFILE_MODE | MRC_CTL_EV_FMT_PROFILE_OP)) &&
      p.state == MRC_CTL_PROFILE_ONLINE)
    return EBUSY;
  if (mask & MRC_CTL_EV_FMT_PROFILE_MODE)
    if (int e = fmt_mode(nic, p, a, id)) return e;
  if (mask & MRC_CTL_EV_FMT_PROFILE_OP)
    if (int e = fmt_fields(p, a, id)) return e;
  if (!(mask & MRC_CTL_EV_FMT_PROFILE_STATE)) return 0;
  const mrc_ctl_profile_state to = profile_state(a.profile_state);
  if (to == p.state) return 0;
  if (!lifecycle_allows(p.state, to)) return EINVAL;
  if (p.state == MRC_CTL_PROFILE_INIT && !p.mode_set) return EINVAL;    // to OFFLINE: MODE
  if (to == MRC_CTL_PROFILE_ONLINE && p.fields.empty()) return EINVAL;  // to ONLINE: the fields
  if (p.state == MRC_CTL_PROFILE_ONLINE && fmt_in_use(nic, id)) return EBUSY;
  if (to == MRC_CTL_PROFILE_INIT) p.mode_set = false;
  p.state = to;
  return 0;
}

// CC profile 0 is fixed: any change is refused as for a profile in use (EBUSY).
int cc_modify0(int mask) {
  constexpr int kKnown = MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM |
                         MRC_CTL_CC_PROFILE_CONFIG | MRC_CTL_CC_PROFILE_VENDOR_CFG;
  if (mask & ~kKnown) return EINVAL;
  return mask & (MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM |
                 MRC_CTL_CC_PROFILE_CONFIG)
             ? EBUSY
             : 0;
}

// REQUIRES: Nic::events_mutex (every shard's round reports).
void push_ev_event(Nic& nic, uint64_t profile, const mrc_ctl_ev& ev, mrc_ctl_ev_state state) {
  for (mrc_context* c : nic.contexts)
    for (mrc_cq* cq : c->cq_list) {
      if (!cq->ev_cq) continue;
      if (cq->ev_events.size() >= cq->ev_capacity) {
        ++cq->ev_dropped;
        continue;
      }
      mrc_ctl_ev_event e{};
      e.profile_id = profile;
      e.ev = ev;
      e.drop_count = cq->ev_dropped;
      e.state = state;
      cq->ev_dropped = 0;
      cq->ev_events.push_back(e);
    }
}

// REQUIRES: Nic::events_mutex.
void log_watch_event(Nic& nic, const mrc_qp& qp, uint64_t profile, const mrc_ctl_ev& ev,
                     mrc_ctl_ev_state state) {
  if (nic.watch_log.size() >= Nic::kWatchLog) nic.watch_log.pop_front();
  nic.watch_log.push_back(
      WatchEvent{++nic.watch_seq, qp.placed.qp->qpn().value, profile, ev, state});
  if (nic.watch_wake_fd >= 0) {
    const uint64_t one = 1;
    (void)!write(nic.watch_wake_fd, &one, sizeof one);
  }
}

// REQUIRES: the QP's shard lock.
void scan_qp(Nic& nic, mrc_qp& qp) {
  const EvSet* evs = qp.placed.qp->evs();
  if (evs == nullptr) return;
  const EvTransitions& t = evs->transitions();
  const uint64_t total = t.to_assumed_bad + t.revived + t.to_denied + t.replaced;
  if (total == qp.ev_transitions_seen && qp.ev_seen.size() == evs->size()) return;
  qp.ev_transitions_seen = total;
  const uint64_t id = qp.has_ev_profile ? qp.ev_profile : 0;
  const EvProfile& profile = nic.ev_profiles.at(id);  // in use, so it exists (0: since open)
  const int mask = profile.event_mask;
  qp.ev_seen.resize(evs->size(), static_cast<uint8_t>(EvState::kGood));
  for (size_t k = 0; k < evs->size(); ++k) {
    const auto i = static_cast<uint16_t>(k);
    const auto now = static_cast<uint8_t>(
        evs->slot(i).state == EvState::kSkip ? EvState::kGood : evs->slot(i).state);
    if (now == qp.ev_seen[i]) continue;
    const mrc_ctl_ev_state state = to_ctl(static_cast<EvState>(now));
    const bool report =
        (state == MRC_CTL_EV_ASSUMED_BAD && (mask & MRC_CTL_EV_ASSUMED_BAD)) ||
        (state == MRC_CTL_EV_GOOD && qp.ev_seen[i] == static_cast<uint8_t>(EvState::kAssumedBad) &&
         (mask & MRC_CTL_EV_GOOD));
    qp.ev_seen[i] = now;
    const mrc_ctl_ev ev = make_ev(nic, profile, qp.placed.shard, evs->slot(i));
    std::lock_guard events(nic.events_mutex);
    if (report) push_ev_event(nic, id, ev, state);
    log_watch_event(nic, qp, id, ev, state);
  }
}

// ---- EV probes ----------------------------------------------------------------------------

bool is_zero(const ibv_gid& gid) {
  static const uint8_t kZero[16] = {};
  return std::memcmp(gid.raw, kZero, sizeof kZero) == 0;
}

struct ProbeTarget {
  uint32_t peer = 0;  // the UDP host's peer handle
  PlaneId plane{0};
  Ev ev{0};
};

// The address a GID names on a plane of `local`'s family (IPv4-mapped for an IPv4 plane, any
// other for an IPv6 one), at `local`'s port; false if it names none.
bool gid_address(const ibv_gid& gid, const io::PlaneAddress& local, io::PlaneAddress& out) {
  out = io::PlaneAddress{};
  out.port = local.port;
  out.v6 = local.v6;
  uint32_t ip = 0;
  if (is_zero(gid) || gid_ipv4(gid.raw, ip) == local.v6) return false;
  if (local.v6)
    std::memcpy(out.address6.s6_addr, gid.raw, sizeof gid.raw);
  else
    out.address.s_addr = ip;
  return !local.v6 ? ip != 0 : true;
}

bool same_address(const io::PlaneAddress& a, const io::PlaneAddress& b) {
  const io::SocketAddress x = a.socket(), y = b.socket();
  return x.family() == y.family() && std::memcmp(x.bytes(), y.bytes(), x.byte_count()) == 0;
}

// The source port of a probe's STEV EV, which is given the EV's flow label unless an ONLINE
// profile's EV holds it at another (EBUSY).
int probe_stev_port(Nic& nic, const mrc_ctl_ep_req& r, uint16_t& port) {
  const std::string name = "EV probe " + std::to_string(r.req_id) + ": ";
  if (const std::string problem = stev_device_problem(nic); !problem.empty())
    return refuse(EOPNOTSUPP, name + problem);  // a format the device does not offer
  if (const std::string bad = check_stev_ev(nic, r.req_ev); !bad.empty())
    return refuse(EINVAL, name + bad);
  auto set = stev_bind_all(nic, UINT64_MAX, {r.req_ev});
  if (!set.ok()) return refuse(EBUSY, name + set.error().message);
  port = ev_source_port(r.req_ev);
  return 0;
}

// The EV source port a probe's EV names (errno value, 0 = found): one of ours (mode UDP), or the
// port bound to its path (mode SRV6, binding one if none is: ev_srv6.h).
int probe_port(Nic& nic, const mrc_ctl_ep_req& r, uint16_t& port) {
  if (raw(r.ev_fmt_mode) == MRC_CTL_EV_FMT_MODE_UDP) {
    if (!valid_port_ev(nic, r.req_ev)) return EINVAL;
    port = ev_source_port(r.req_ev);
    return 0;
  }
  if (raw(r.ev_fmt_mode) == MRC_CTL_EV_FMT_MODE_STEV) return probe_stev_port(nic, r, port);
  if (raw(r.ev_fmt_mode) != MRC_CTL_EV_FMT_MODE_SRV6) return EOPNOTSUPP;  // no such mode
  if (const std::string problem = srv6_device_problem(nic); !problem.empty())
    return refuse(EOPNOTSUPP, "EV probe " + std::to_string(r.req_id) + ": " + problem);
  auto bound = srv6_ev_port(nic, r.req_ev, true);
  if (!bound.ok())
    return refuse(bound.error().code == Errc::kResourceExhausted ? ENOSPC : EINVAL,
                  "EV probe " + std::to_string(r.req_id) + ": " + bound.error().message);
  port = bound.value();
  return 0;
}

// The host, plane and EV a probe request names (errno value, 0 = found): the EV's port is the
// plane (probe_port: its source port there); sgid (if given) is our address on it; dgid is any
// RoCEv2 GID of the plane's family: a configured host's plane (reached at that host's port) or
// any other address (reached at our own MRC port on the plane, the RoCEv2 convention). No QP is
// needed: the peer's endpoint answers probes itself (Endpoint::prober).
int probe_target(Nic& nic, const mrc_ctl_ep_req& r, ProbeTarget& out) {
  const size_t planes = nic.spec->planes.size();
  uint16_t port = 0;
  if (int e = probe_port(nic, r, port)) return e;  // the mode, then the EV and its port
  const int plane = r.req_ev.port - 1;
  const io::PlaneAddress& local = nic.spec->planes[plane];
  io::PlaneAddress to, from;
  if (!gid_address(r.dgid, local, to)) return EINVAL;
  if (!is_zero(r.sgid) && (!gid_address(r.sgid, local, from) || !same_address(from, local)))
    return EINVAL;
  std::vector<io::PlaneAddress> addresses(planes);  // unused planes: the unspecified address
  for (size_t p = 0; p < planes; ++p) addresses[p].v6 = nic.spec->planes[p].v6;
  const auto dest = find_peer_by_gid(device_config(), r.dgid.raw);
  if (dest && dest->planes.size() == planes && same_address(dest->planes[plane], to)) {
    addresses = dest->planes;
  } else {
    addresses[plane] = to;
  }
  const auto peer = nic.shard(0).peer(addresses);  // probes are shard 0's
  if (!peer.ok()) return EINVAL;
  out = ProbeTarget{peer.value(), PlaneId(static_cast<uint8_t>(plane)), Ev(port)};
  return 0;
}

// Queues every probe (request id = batch << 16 | index), or none (errno value).
int probe_send(Nic& nic, const mrc_ctl_ep_req* req, int n, std::vector<ProbeTarget>& targets,
               uint32_t batch) {
  std::lock_guard lock(nic.mutex);
  targets.assign(static_cast<size_t>(n), {});
  for (int i = 0; i < n; ++i)
    if (int e = probe_target(nic, req[i], targets[i])) return e;
  EvProber& prober = nic.shard(0).endpoint().prober();
  prober.forget();  // answers of an earlier, timed-out batch are of no use now
  for (int i = 0; i < n; ++i) {
    const ProbeTarget& t = targets[static_cast<size_t>(i)];
    if (!prober.probe(t.peer, t.plane, t.ev, batch << 16 | static_cast<uint32_t>(i))) {
      prober.forget();
      return EAGAIN;
    }
  }
  return 0;
}

// Moves answers of this batch into rsp (arrival order); answers of older batches are dropped.
void probe_collect(Nic& nic, const std::vector<ProbeTarget>& targets, const mrc_ctl_ep_req* req,
                   uint32_t batch, mrc_ctl_ep_rsp* rsp, int& got, bool forget) {
  std::lock_guard lock(nic.mutex);
  EvProber& prober = nic.shard(0).endpoint().prober();
  while (got < static_cast<int>(targets.size())) {
    const auto a = prober.take_answer();
    if (!a) break;
    const uint32_t index = a->request_id & 0xffff;
    if (a->request_id >> 16 != batch || index >= targets.size()) continue;
    const auto rtt = std::clamp<int64_t>(a->rtt.ns, 0, UINT32_MAX);
    rsp[got++] = mrc_ctl_ep_rsp{req[index].req_id, static_cast<uint8_t>(a->plane.value + 1),
                                static_cast<unsigned>(rtt), 0};
  }
  if (forget) prober.forget();
}

int probe_batch(Nic& nic, const mrc_ctl_ep_req* req, int n, uint32_t timeout_ns,
                mrc_ctl_ep_rsp* rsp, int& got) {
  std::lock_guard batch_lock(nic.probe_mutex);
  const uint32_t batch = ++nic.probe_batch & 0xffff;
  std::vector<ProbeTarget> targets;
  if (int e = probe_send(nic, req, n, targets, batch)) return e;
  nic.shard(0).wake();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  for (;;) {
    const bool late = std::chrono::steady_clock::now() >= deadline;
    probe_collect(nic, targets, req, batch, rsp, got, late);
    if (got == n) {
      probe_collect(nic, targets, req, batch, rsp, got, true);  // forgets the probes
      return 0;
    }
    if (late) return ETIMEDOUT;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace

namespace mrc::ocp {

void ctl_open(Nic& nic) {
  profile0(nic);
}

void ctl_after_progress(Nic& nic, uint32_t s) {
  for (mrc_context* c : nic.contexts) {
    for (mrc_qp* qp : c->qp_list)
      if (qp->placed.shard == s) scan_qp(nic, *qp);
    std::lock_guard events(nic.events_mutex);
    for (mrc_cq* cq : c->cq_list)
      if (cq->ev_cq && cq->armed && cq->channel != nullptr && !cq->ev_events.empty()) {
        cq->armed = false;
        ++cq->events_delivered;
        // The channel carries the CQ's address (mrc_get_cq_event reads it back).
        const auto token = reinterpret_cast<uintptr_t>(cq);
        (void)!write(cq->channel->write_fd, &token, sizeof token);
      }
  }
}

int ctl_apply_ev_profile(Nic& nic, uint64_t id, uint32_t s, QpConfig& config) {
  if (id == 0) profile0(nic);
  auto it = nic.ev_profiles.find(id);
  if (it == nic.ev_profiles.end() || it->second.state != MRC_CTL_PROFILE_ONLINE) return EINVAL;
  if (has_list(it->second)) {
    config.ev_list.clear();
    const bool srv6 = srv6_evs(nic, it->second);
    for (const mrc_ctl_ev& ev : it->second.list) {
      // An SRv6 EV's port was bound when the profile went ONLINE (bind_packed_list); a STEV or
      // UDP EV names its port in its first two bytes, the device's: the QP's shard has its own.
      auto bound = srv6 ? srv6_ev_port(nic, ev, false)
                        : Result<uint16_t, Error>(
                              static_cast<uint16_t>(ev_source_port(ev) + nic.ev_port_offset(s)));
      const uint16_t port = bound.ok() ? bound.value() : 0;
      config.ev_list.push_back(ExplicitEv{PlaneId(static_cast<uint8_t>(ev.port - 1)), Ev(port)});
    }
    const auto distinct = static_cast<uint16_t>(distinct_evs(it->second.list));
    // A generated list may repeat an EV: the floor can be at most its distinct EVs.
    config.ev_min_active =
        std::min<uint16_t>(it->second.min_active > 0 ? static_cast<uint16_t>(it->second.min_active)
                                                     : config.ev_min_active,
                           distinct);
    return 0;
  }
  config.ev_list.clear();
  if (it->second.count > 0) config.ev_count = static_cast<uint16_t>(it->second.count);
  if (it->second.min_active > 0)
    config.ev_min_active = static_cast<uint16_t>(it->second.min_active);
  config.ev_min_active = std::min(config.ev_min_active, config.ev_count);
  return 0;
}

int ctl_apply_cc_profile(Nic& nic, uint64_t id, QpConfig& config) {
  if (id == 0) {  // the default: what the QP had before any profile
    cc_profile0(nic);
    const QpConfig d = default_cc(nic);
    config.cc = d.cc;
    config.nscc = d.nscc;
    config.fixed_window_bytes = d.fixed_window_bytes;
    return 0;
  }
  auto it = nic.cc_profiles.find(id);
  if (it == nic.cc_profiles.end() || it->second.state != MRC_CTL_PROFILE_ONLINE) return EINVAL;
  const CcProfile& p = it->second;
  if (p.algorithm.empty()) {
    config.cc = CcAlgorithm::kFixed;  // congestion control off: a fixed window
    config.fixed_window_bytes = config.nscc.max_window_bytes;
    return 0;
  }
  config.cc = CcAlgorithm::kNscc;
  NsccConfig& n = config.nscc;
  const mrc_ctl_cc_nscc_cfg& c = p.nscc;
  n.quick_adapt = c.disable_qa == 0;
  if (c.qa_gate != 0) n.qa_gate = c.qa_gate;  // 0, like the other zero fields: the default
  n.qa_threshold_ns = c.qa_threshold;
  n.base_rtt_ns = c.base_rtt;
  n.target_delay_ns = c.target_delay;
  if (c.max_cwnd != 0) n.max_window_bytes = c.max_cwnd;
  n.min_window_bytes = std::min(n.min_window_bytes, n.max_window_bytes);
  n.initial_window_bytes = std::min(n.initial_window_bytes, n.max_window_bytes);
  if (c.eta > 0) n.proportional_gain = c.eta;
  if (c.fi > 0) n.fair_increase_mtus = c.fi;
  if (c.gamma > 0) n.decrease_gain = c.gamma;
  if (c.max_md_jump > 0) n.max_decrease = c.max_md_jump;
  return 0;
}

void ctl_qp_connected(Nic& nic, mrc_qp& qp) {
  const uint64_t id = qp.has_ev_profile ? qp.ev_profile : 0;
  EvSet* evs = qp.placed.qp->evs();
  if (evs == nullptr) return;
  const EvProfile& p = id == 0 ? profile0(nic) : nic.ev_profiles[id];
  for (const mrc_ctl_ev_op_entry& e : p.evs) {
    const uint16_t slot = find_slot(nic, p, qp.placed.shard, *evs, e.ev);
    if (slot != EvSet::kNoSlot) evs->set_denied(slot, true);
  }
}

}  // namespace mrc::ocp

namespace {

// A forwarded call's result as the API returns it: 0, or -1 with errno.
int forwarded(int e) {
  return e == 0 ? 0 : mrc::ocp::fail(e, -1);
}

}  // namespace

extern "C" {

void mrc_ctl_query_version(uint32_t* current_version, uint32_t* last_supported_version,
                           uint32_t* vendor_version, uint32_t* last_supported_vendor_version) {
  if (current_version != nullptr) *current_version = MRC_CTL_API_CURRENT_VERSION;
  if (last_supported_version != nullptr)
    *last_supported_version = MRC_CTL_API_LAST_SUPPORTED_VERSION;
  if (vendor_version != nullptr) *vendor_version = MRC_CTL_VENDOR_API_CURRENT_VERSION;
  if (last_supported_vendor_version != nullptr)
    *last_supported_vendor_version = MRC_CTL_VENDOR_API_LAST_SUPPORTED_VERSION;
}

int mrc_ctl_query_device_ex(ibv_context* context, mrc_context* mcontext, mrc_ctl_device_attr* attr,
                            int* supported) {
  SoftContext* soft = soft_context(context);
  if (context == nullptr || attr == nullptr) return fail(EINVAL, -1);
  if (mcontext != nullptr && (!ok_ctx(mcontext) || mcontext->device != soft))
    return fail(EINVAL, -1);
  std::memset(attr, 0, sizeof *attr);
  if (supported != nullptr) *supported = soft != nullptr;
  if (soft == nullptr) return supported != nullptr ? 0 : fail(EOPNOTSUPP, -1);
  const auto planes = static_cast<uint32_t>(soft->nic->spec->planes.size());
  attr->mrc_ctl_protocol_version = MRC_CTL_PROTOCOL_VERSION_1;
  attr->ev.ev_max_fmt_profiles = 64;
  attr->ev.ev_max_profiles = 64;
  attr->ev.ev_max_count = 256;
  attr->ev.ev_free_count = 256;
  attr->ev.ev_max_count_profile = 256;
  attr->ev.ev_count_align = planes;
  const bool srv6 = srv6_device_problem(*soft->nic).empty();  // SRV6 format profiles
  const bool stev = stev_device_problem(*soft->nic).empty();  // STEV ones
  attr->ev.ev_max_width = srv6 ? 128 : stev ? 32 : 16;
  attr->ev.ev_fmt_mode_mask = MRC_CTL_EV_FMT_MODE_UDP | (srv6 ? MRC_CTL_EV_FMT_MODE_SRV6 : 0) |
                              (stev ? MRC_CTL_EV_FMT_MODE_STEV : 0);
  attr->ev.ev_mode_mask = MRC_CTL_EV_MODE_AUTO | MRC_CTL_EV_MODE_EXP | MRC_CTL_EV_MODE_GEN;
  attr->cc.cc_max_profiles = 64;
  attr->cc.algorithms = const_cast<const char**>(kAlgorithms);
  attr->phy_port_mask = ((1u << planes) - 1) << 1;
  attr->opt_attr = MRC_CTL_OPT_CAP_EV_EVENT | MRC_CTL_OPT_CAP_EV_EVENT_PRECISE_DROP_CNT |
                   MRC_CTL_OPT_CAP_EP_OP_EV_PROBE;
  return 0;
}

int mrc_ctl_query_device(ibv_context* context, mrc_ctl_device_attr* ctl_attr) {
  return mrc_ctl_query_device_ex(context, nullptr, ctl_attr, nullptr);
}

int mrc_ctl_query_port(mrc_context* context, uint8_t port_num, mrc_ctl_port_attr* attr,
                       int attr_mask) {
  if (!ok_ctx(context) || attr == nullptr || attr_mask & ~MRC_CTL_PORT_ADMIN_STATE)
    return fail(EINVAL, -1);
  Nic& nic = *context->nic;
  if (port_num < 1 || port_num > nic.spec->planes.size()) return fail(EINVAL, -1);
  if (nic.remote()) return forwarded(remote_port(nic, false, port_num, attr, attr_mask));
  auto locks = nic.lock_all();
  attr->port_admin_state =
      nic.admin_up[port_num - 1] ? MRC_CTL_PORT_ADMIN_ENABLED : MRC_CTL_PORT_ADMIN_DISABLED;
  return 0;
}

int mrc_ctl_modify_port(mrc_context* context, uint8_t port_num, mrc_ctl_port_attr* attr,
                        int attr_mask) {
  if (!ok_ctx(context) || attr == nullptr || attr_mask & ~MRC_CTL_PORT_ADMIN_STATE)
    return fail(EINVAL, -1);
  Nic& nic = *context->nic;
  if (port_num < 1 || port_num > nic.spec->planes.size()) return fail(EINVAL, -1);
  if (!(attr_mask & MRC_CTL_PORT_ADMIN_STATE)) return 0;
  if (nic.remote()) return forwarded(remote_port(nic, true, port_num, attr, attr_mask));
  if (raw(attr->port_admin_state) != MRC_CTL_PORT_ADMIN_ENABLED &&
      raw(attr->port_admin_state) != MRC_CTL_PORT_ADMIN_DISABLED)
    return fail(EINVAL, -1);
  {
    auto locks = nic.lock_all();
    const bool up = attr->port_admin_state == MRC_CTL_PORT_ADMIN_ENABLED;
    nic.admin_up[port_num - 1] = up;
    for (uint32_t s = 0; s < nic.shards(); ++s) nic.shard(s).host().set_plane_up(port_num - 1, up);
  }
  for (uint32_t s = 0; s < nic.shards(); ++s) nic.shard(s).wake();
  return 0;
}

int mrc_ctl_modify_ev_fmt_profile(mrc_context* mrc_ctx, uint64_t id,
                                  mrc_ctl_ev_fmt_profile_attr* attr, int mask) {
  if (!ok_ctx(mrc_ctx) || attr == nullptr) return fail(EINVAL, -1);
  if (mrc_ctx->nic->remote())
    return forwarded(remote_ev_fmt_profile(*mrc_ctx->nic, true, id, attr, mask));
  auto locks = mrc_ctx->nic->lock_all();
  auto& profiles = mrc_ctx->nic->ev_fmt_profiles;
  EvFmtProfile changed = profiles.contains(id) ? profiles[id] : EvFmtProfile{};
  const int e = fmt_modify(*mrc_ctx->nic, id, changed, *attr, mask);
  if (e != 0) return fail(e, -1);  // a refused call changes and creates nothing
  profiles[id] = std::move(changed);
  return 0;
}

int mrc_ctl_query_ev_fmt_profile(mrc_context* mrc_ctx, uint64_t id,
                                 mrc_ctl_ev_fmt_profile_attr* attr, int mask) {
  if (!ok_ctx(mrc_ctx) || attr == nullptr) return fail(EINVAL, -1);
  if (mrc_ctx->nic->remote())
    return forwarded(remote_ev_fmt_profile(*mrc_ctx->nic, false, id, attr, mask));
  auto locks = mrc_ctx->nic->lock_all();
  auto it = mrc_ctx->nic->ev_fmt_profiles.find(id);
  if (it == mrc_ctx->nic->ev_fmt_profiles.end()) return fail(EINVAL, -1);
  attr->profile_state = attr->cur_profile_state = it->second.state;
  attr->ev_fmt_mode = it->second.mode;
  if (mask & MRC_CTL_EV_FMT_PROFILE_OP) {
    const int n = static_cast<int>(it->second.fields.size());
    if (attr->ev_fmt_op.fmt_field_count < n || attr->ev_fmt_op.fmt_fields == nullptr) {
      attr->ev_fmt_op.fmt_field_count = n;
      return fail(E2BIG, -1);
    }
    std::copy(it->second.fields.begin(), it->second.fields.end(), attr->ev_fmt_op.fmt_fields);
    attr->ev_fmt_op.fmt_field_count = n;
  }
  return 0;
}

int mrc_ctl_modify_ev_profile(mrc_context* mrc_ctx, uint64_t id, mrc_ctl_ev_profile_attr* attr,
                              int mask) {
  if (!ok_ctx(mrc_ctx) || attr == nullptr) return fail(EINVAL, -1);
  Nic& nic = *mrc_ctx->nic;
  if (nic.remote()) return forwarded(remote_ev_profile(nic, true, id, attr, mask));
  auto locks = nic.lock_all();
  const bool fresh = id != 0 && !nic.ev_profiles.contains(id);
  EvProfile& stored = id == 0 ? profile0(nic) : nic.ev_profiles[id];
  EvProfile changed = stored;
  const int e = modify_ev_profile(nic, id, changed, *attr, mask);
  // A refused call changes and creates nothing, but for an EV operation's entries before the
  // one that failed: those took effect (in the QPs too), as OCP has it.
  const bool entries_applied = e != 0 && !fresh && (mask & MRC_CTL_EV_PROFILE_EV_OP) &&
                               (raw(attr->ev_op.op) == MRC_CTL_EV_OP_REPLACE_EV ||
                                raw(attr->ev_op.op) == MRC_CTL_EV_OP_MODIFY_EV_STATE);
  if (e == 0 || entries_applied)
    stored = std::move(changed);
  else if (fresh)
    nic.ev_profiles.erase(id);
  return e == 0 ? 0 : fail(e, -1);
}

int mrc_ctl_query_ev_profile(mrc_context* mrc_ctx, uint64_t id, mrc_ctl_ev_profile_attr* attr,
                             int mask) {
  if (!ok_ctx(mrc_ctx) || attr == nullptr) return fail(EINVAL, -1);
  if ((mask & MRC_CTL_EV_PROFILE_EV_OP) && (mask & MRC_CTL_EV_PROFILE_EV_FIELDS_OP))
    return fail(EINVAL, -1);
  Nic& nic = *mrc_ctx->nic;
  if (nic.remote()) return forwarded(remote_ev_profile(nic, false, id, attr, mask));
  auto locks = nic.lock_all();
  if (id != 0 && nic.ev_profiles.find(id) == nic.ev_profiles.end()) return fail(EINVAL, -1);
  EvProfile& p = id == 0 ? profile0(nic) : nic.ev_profiles[id];
  attr->profile_state = attr->cur_profile_state = p.state;
  attr->ev_mode = p.mode;
  attr->ev_fmt_profile_id = p.fmt_id;
  attr->ev_count = p.count;
  attr->ev_min_active = p.min_active;
  attr->ev_event_mask = p.event_mask;
  if (mask & MRC_CTL_EV_PROFILE_EV_OP)
    if (int e = ev_op(nic, id, p, *attr, false)) return fail(e, -1);
  if (mask & MRC_CTL_EV_PROFILE_EV_FIELDS_OP)
    if (int e = ev_fields_op(nic, p, *attr, false)) return fail(e, -1);
  return 0;
}

int mrc_ctl_modify_cc_profile(mrc_context* mrc_ctx, uint64_t id, mrc_ctl_cc_profile_attr* attr,
                              int mask) {
  if (!ok_ctx(mrc_ctx) || attr == nullptr) return fail(EINVAL, -1);
  if (mrc_ctx->nic->remote())
    return forwarded(remote_cc_profile(*mrc_ctx->nic, true, id, attr, mask));
  auto locks = mrc_ctx->nic->lock_all();
  auto& profiles = mrc_ctx->nic->cc_profiles;
  const bool fresh = id != 0 && !profiles.contains(id);
  const int e = id == 0 ? cc_modify0(mask) : cc_modify(profiles[id], *attr, mask);
  if (e != 0 && fresh) profiles.erase(id);  // a refused call creates nothing
  return e == 0 ? 0 : fail(e, -1);
}

int mrc_ctl_query_cc_profile(mrc_context* mrc_ctx, uint64_t id, mrc_ctl_cc_profile_attr* attr,
                             int mask) {
  if (!ok_ctx(mrc_ctx) || attr == nullptr) return fail(EINVAL, -1);
  if (mrc_ctx->nic->remote())
    return forwarded(remote_cc_profile(*mrc_ctx->nic, false, id, attr, mask));
  auto locks = mrc_ctx->nic->lock_all();
  if (id == 0) cc_profile0(*mrc_ctx->nic);
  auto it = mrc_ctx->nic->cc_profiles.find(id);
  if (it == mrc_ctx->nic->cc_profiles.end()) return fail(EINVAL, -1);
  attr->profile_state = attr->cur_profile_state = it->second.state;
  attr->algorithm = it->second.algorithm.empty() ? nullptr : kAlgorithms[0];
  attr->cc_config = it->second.has_config ? &it->second.nscc : nullptr;
  return 0;
}

mrc_cq* mrc_ctl_create_ev_event_cq(mrc_context* mrc_ctx, int cqe, void* cq_context,
                                   mrc_comp_channel* channel, int comp_vector) {
  if (!ok_ctx(mrc_ctx) || cqe < 1 || cqe > kMaxCqe || comp_vector != 0)
    return fail<mrc_cq*>(EINVAL, nullptr);
  if (channel != nullptr && (!valid(channel) || channel->context != mrc_ctx))
    return fail<mrc_cq*>(EINVAL, nullptr);
  uint64_t remote_id = 0;
  if (mrc_ctx->nic->remote()) {
    if (channel != nullptr) return fail<mrc_cq*>(EOPNOTSUPP, nullptr);  // remote EV CQs are polled
    if (const int e = remote_create_ev_cq(*mrc_ctx->nic, cqe, remote_id))
      return fail<mrc_cq*>(e, nullptr);
  }
  auto* cq = new mrc_cq();
  cq->remote_id = remote_id;
  cq->context = mrc_ctx;
  cq->channel = channel;
  cq->cq_context = cq_context;
  cq->ev_cq = true;
  cq->ev_capacity = static_cast<uint32_t>(cqe);
  auto locks = mrc_ctx->nic->lock_all();
  if (channel != nullptr) ++channel->cqs;
  ++mrc_ctx->cqs;
  mrc_ctx->cq_list.push_back(cq);
  return cq;
}

int mrc_ctl_poll_ev_event(mrc_cq* ev_cq, int num_entries, mrc_ctl_ev_event* ev_event) {
  if (!valid(ev_cq) || !ev_cq->ev_cq || num_entries < 0 || (num_entries > 0 && ev_event == nullptr))
    return -EINVAL;
  if (ev_cq->remote_id != 0) {
    int got = 0;
    const int e =
        remote_poll_ev_cq(*ev_cq->context->nic, ev_cq->remote_id, num_entries, ev_event, got);
    return e != 0 ? -e : got;
  }
  std::lock_guard events(ev_cq->context->nic->events_mutex);
  int n = 0;
  for (; n < num_entries && !ev_cq->ev_events.empty(); ++n) {
    ev_event[n] = ev_cq->ev_events.front();
    ev_cq->ev_events.pop_front();
  }
  return n;
}

int mrc_ctl_ep_batch_send_wait(mrc_context* mrc_ctx, uint8_t req_tc, mrc_ctl_ep_op_type op_type,
                               mrc_ctl_ep_req* req, int num_req, uint32_t rsp_timeout,
                               mrc_ctl_ep_rsp* rsp, int* num_rsp) {
  (void)req_tc;  // control packets use the engine's control class
  if (num_rsp != nullptr) *num_rsp = 0;
  if (!ok_ctx(mrc_ctx) || num_rsp == nullptr || num_req < 0 ||
      (num_req > 0 && (req == nullptr || rsp == nullptr)))
    return fail(EINVAL, -1);
  if (op_type == MRC_CTL_EP_OP_PORT_STATUS_UPDATE)
    return fail(EOPNOTSUPP, -1);  // the engine sends its own
  if (op_type != MRC_CTL_EP_OP_EV_PROBE || num_req > static_cast<int>(EvProber::kMaxProbes))
    return fail(EINVAL, -1);
  if (mrc_ctx->nic->remote())
    return forwarded(
        remote_ep_batch(*mrc_ctx->nic, op_type, req, num_req, rsp_timeout, rsp, *num_rsp));
  const int e = probe_batch(*mrc_ctx->nic, req, num_req, rsp_timeout, rsp, *num_rsp);
  return e == 0 ? 0 : fail(e, -1);
}

}  // extern "C"
