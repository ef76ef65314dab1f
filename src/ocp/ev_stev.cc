// STEV EVs of the OCP controller API: a source port and its flow label (ev_stev.h).
#include "ocp/ev_stev.h"

#include <cstdio>
#include <map>
#include <utility>

#include "mrc/datapath.hpp"
#include "ocp/objects.h"

namespace mrc::ocp {

namespace {

std::string hex(uint32_t label) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", label);
  return text;
}

// The labels the EVs of ONLINE STEV profiles (but profile `except`) put on their ports.
std::map<std::pair<int, uint16_t>, uint32_t> labels_in_use(const Nic& nic, uint64_t except) {
  std::map<std::pair<int, uint16_t>, uint32_t> used;
  for (const auto& [id, p] : nic.ev_profiles) {
    if (id == except || p.state != MRC_CTL_PROFILE_ONLINE ||
        ev_format_of(nic.ev_fmt_profiles, p.fmt_id) != MRC_CTL_EV_FMT_MODE_STEV)
      continue;
    for (const mrc_ctl_ev& ev : p.list) used[{ev.port - 1, ev_source_port(ev)}] = stev_label(ev);
  }
  return used;
}

}  // namespace

std::string check_stev_format(const std::vector<mrc_ctl_ev_fmt_field>& fields) {
  uint32_t width = 0;
  for (const auto& f : fields) width += f.width;
  if (width < 1 || width > 32)
    return "fields of " + std::to_string(width) +
           " bits: a STEV EV is 1 to 32 bits (a UDP source port, then a flow label)";
  return {};
}

std::string stev_device_problem(const Nic& nic) {
  if (nic.spec->host.context.threads > 1)  // a label is put on one engine's source port
    return "device " + nic.spec->name +
           " runs threads=" + std::to_string(nic.spec->host.context.threads) +
           ": STEV EVs of the controller need threads=1";
  for (size_t p = 0; p < nic.spec->planes.size(); ++p)
    if (!nic.spec->planes[p].v6 || nic.spec->host.context.backend != mrc::Backend::kUdp)
      return "device " + nic.spec->name + ": plane " + std::to_string(p + 1) + " (port " +
             std::to_string(p + 1) +
             ") has no flow label: STEV EVs need IPv6 planes on the udp backend";
  return {};
}

uint32_t stev_label(const mrc_ctl_ev& ev) {
  return static_cast<uint32_t>(ev.val[2] << 8 | ev.val[3]);
}

std::string check_stev_ev(const Nic& nic, const mrc_ctl_ev& ev) {
  const size_t planes = nic.spec->planes.size();
  const auto name = [&] {  // built for a refusal only
    return "STEV EV port " + std::to_string(ev_source_port(ev)) + " label " + hex(stev_label(ev)) +
           " (port " + std::to_string(ev.port) + ")";
  };
  if (ev.port < 1 || ev.port > planes)
    return name() + ": device " + nic.spec->name + " has ports 1-" + std::to_string(planes);
  for (size_t i = 4; i < sizeof ev.val; ++i)
    if (ev.val[i] != 0) return name() + ": bytes 4-31 must be zero (a STEV EV has 32 bits)";
  const PortRange range = plane_ev_ports(*nic.spec, ev.port - 1);
  if (ev_source_port(ev) - range.first >= range.count)
    return name() + ": its source port is none of the plane's EV source ports " +
           std::to_string(range.first) + "-" + std::to_string(range.first + range.count - 1);
  return {};
}

Result<Ok, Error> stev_bind_all(Nic& nic, uint64_t id, const std::vector<mrc_ctl_ev>& evs) {
  auto used = labels_in_use(nic, id);
  std::map<std::pair<int, uint16_t>, uint32_t> wanted;
  for (const mrc_ctl_ev& ev : evs) {
    const std::pair<int, uint16_t> key{ev.port - 1, ev_source_port(ev)};
    for (const auto* taken : {&used, &wanted}) {
      auto it = taken->find(key);
      if (it != taken->end() && it->second != stev_label(ev))
        return fail(Errc::kInvalidArgument,
                    "source port " + std::to_string(key.second) + " of port " +
                        std::to_string(ev.port) + " would carry flow labels " + hex(it->second) +
                        " and " + hex(stev_label(ev)) +
                        (taken == &used ? " (the first for an ONLINE profile's EV)" : "") +
                        ": a source port carries one label");
    }
    wanted[key] = stev_label(ev);
  }
  for (const auto& [key, label] : wanted)
    if (auto set = nic.shard(0).host().set_port_flow_label(key.first, key.second, label); !set.ok())
      return Err{set.error()};
  return Ok{};
}

mrc_ctl_ev stev_ev_of_port(const Nic& nic, int plane, uint16_t port) {
  mrc_ctl_ev ev{};
  const uint32_t label = nic.shard(0).host().port_flow_label(plane, port);
  ev.val[0] = static_cast<uint8_t>(port >> 8);
  ev.val[1] = static_cast<uint8_t>(port);
  ev.val[2] = static_cast<uint8_t>(label >> 8);
  ev.val[3] = static_cast<uint8_t>(label);
  ev.port = static_cast<uint8_t>(plane + 1);
  return ev;
}

}  // namespace mrc::ocp
