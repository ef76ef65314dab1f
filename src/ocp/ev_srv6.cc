// SRv6 EVs of the OCP controller API: addresses bound to EV source ports (ev_srv6.h).
#include "ocp/ev_srv6.h"

#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <span>

#include "mrc/datapath.hpp"
#include "ocp/objects.h"
#include "wire/srv6.h"

namespace mrc::ocp {

namespace {

constexpr uint32_t kMaxFormatFieldBits = 32;  // an EV field (mrc_ctl_ev_field) is 32 bits

// The default path of a port no EV is bound to (wire/srv6.h: port % paths).
const std::vector<uint16_t>& own_path(const Nic& nic, uint16_t port) {
  return nic.spec->srv6_paths[port % nic.spec->srv6_paths.size()];
}

// Bindings that some profile's EV list, or `listing` (the list of a profile about to go ONLINE,
// not stored yet), still names (the others' ports may be bound again: a QP's EVs come from an
// ONLINE profile's list, which cannot change while the QP exists).
std::set<uint16_t> ports_in_use(const Nic& nic, int plane, std::span<const mrc_ctl_ev> listing) {
  std::set<uint16_t> used;
  const auto note = [&](const mrc_ctl_ev& ev) {
    if (ev.port != plane + 1 || ev_unpopulated(ev)) return;
    auto path = srv6_ev_path(nic, ev);
    if (!path.ok()) return;
    auto it = nic.srv6_ports.find({plane, path.value()});
    if (it != nic.srv6_ports.end()) used.insert(it->second);
  };
  for (const auto& [id, profile] : nic.ev_profiles)
    std::for_each(profile.list.begin(), profile.list.end(), note);
  std::for_each(listing.begin(), listing.end(), note);
  return used;
}

// The port to bind (plane, path) to: one already on the path and in no use, else the lowest
// port in no use; 0 if every port of the plane is in use. A stale binding of it is dropped.
uint16_t free_port(Nic& nic, int plane, const std::vector<uint16_t>& path,
                   std::span<const mrc_ctl_ev> listing) {
  const std::set<uint16_t> used = ports_in_use(nic, plane, listing);
  uint16_t chosen = 0;
  const PortRange range = plane_ev_ports(*nic.spec, plane);
  for (uint32_t i = 0; i < range.count; ++i) {
    const auto port = static_cast<uint16_t>(range.first + i);
    if (used.count(port) != 0) continue;
    if (chosen == 0) chosen = port;
    if (nic.shard(0).host().port_path(plane, port) == path) {
      chosen = port;
      break;
    }
  }
  std::erase_if(nic.srv6_ports,
                [&](const auto& b) { return b.first.first == plane && b.second == chosen; });
  return chosen;
}

}  // namespace

std::string check_srv6_format(const std::vector<mrc_ctl_ev_fmt_field>& fields) {
  uint32_t width = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].width < 1 || fields[i].width > kMaxFormatFieldBits)
      return "format field " + std::to_string(i) + ": width must be 1-32 bits";
    width += fields[i].width;
  }
  if (width > 128)
    return "fields of " + std::to_string(width) +
           " bits: an SRv6 EV here is one address (128 bits); an SRH segment after it is not "
           "sent by this device";
  if (width < wire::kSrv6BlockBits + wire::kSrv6UsidBits || width % wire::kSrv6UsidBits != 0)
    return "fields of " + std::to_string(width) +
           " bits: an SRv6 EV is the 32-bit block and whole 16-bit uSIDs (48 to 128 bits)";
  return {};
}

std::string srv6_device_problem(const Nic& nic) {
  if (nic.spec->host.context.threads > 1)  // a path is bound to one engine's source port
    return "device " + nic.spec->name +
           " runs threads=" + std::to_string(nic.spec->host.context.threads) +
           ": SRv6 EVs of the controller need threads=1";
  if (!nic.spec->srv6_paths.empty()) return {};
  for (size_t p = 0; p < nic.spec->planes.size(); ++p)
    if (!nic.spec->planes[p].v6)
      return "device " + nic.spec->name + ": plane " + std::to_string(p + 1) + " (port " +
             std::to_string(p + 1) + ") is IPv4; SRv6 EVs need IPv6 planes in SRv6 mode (srv6=)";
  return "device " + nic.spec->name +
         " is not in SRv6 mode: set srv6= (its UDP checksums must be zero for SRv6 EVs)";
}

int srv6_plane_of(const Nic& nic, const mrc_ctl_ev& ev) {
  for (size_t p = 0; p < nic.spec->planes.size(); ++p)
    if (nic.spec->planes[p].v6 &&
        std::memcmp(ev.val, nic.spec->planes[p].address6.s6_addr, wire::kSrv6BlockBits / 8) == 0)
      return static_cast<int>(p);
  return -1;
}

Result<std::vector<uint16_t>, Error> srv6_ev_path(const Nic& nic, const mrc_ctl_ev& ev) {
  if (const std::string problem = srv6_device_problem(nic); !problem.empty())
    return fail(Errc::kInvalidArgument, problem);
  const size_t planes = nic.spec->planes.size();
  if (ev.port < 1 || ev.port > planes)
    return fail(Errc::kInvalidArgument, "EV port " + std::to_string(ev.port) + ": device " +
                                            nic.spec->name + " has ports 1-" +
                                            std::to_string(planes));
  for (size_t i = 16; i < sizeof ev.val; ++i)
    if (ev.val[i] != 0)
      return fail(Errc::kInvalidArgument,
                  "EV bytes 16-31 (an SRH segment) must be zero: this device sends no SRH");
  return wire::srv6_ev_path(ev_address(ev), nic.spec->planes[ev.port - 1u].address6);
}

namespace {

// srv6_ev_port, binding with the EVs of `listing` counted as in use.
Result<uint16_t, Error> ev_port_for(Nic& nic, const mrc_ctl_ev& ev, bool bind,
                                    std::span<const mrc_ctl_ev> listing) {
  auto path = srv6_ev_path(nic, ev);
  if (!path.ok()) return Err{path.error()};
  const int plane = ev.port - 1;
  const auto key = std::make_pair(plane, path.value());
  if (auto it = nic.srv6_ports.find(key); it != nic.srv6_ports.end()) return it->second;
  if (!bind)
    return fail(Errc::kNotFound, "SRv6 EV " +
                                     io::address_text(io::SocketAddress::ipv6(ev_address(ev), 0)) +
                                     " is in no profile of device " + nic.spec->name);
  const uint16_t port = free_port(nic, plane, path.value(), listing);
  if (port == 0)
    return fail(Errc::kResourceExhausted,
                "plane " + std::to_string(ev.port) + " of device " + nic.spec->name + " has " +
                    std::to_string(plane_ev_ports(*nic.spec, plane).count) +
                    " EV source ports, all bound to other SRv6 EVs");
  if (auto set = nic.shard(0).host().set_port_path(plane, port, path.value()); !set.ok())
    return Err{set.error()};
  nic.srv6_ports[key] = port;
  return port;
}

}  // namespace

Result<uint16_t, Error> srv6_ev_port(Nic& nic, const mrc_ctl_ev& ev, bool bind) {
  return ev_port_for(nic, ev, bind, {});
}

Result<Ok, Error> srv6_bind_all(Nic& nic, const std::vector<mrc_ctl_ev>& evs) {
  const auto before = nic.srv6_ports;
  for (const mrc_ctl_ev& ev : evs) {
    if (ev_unpopulated(ev)) continue;
    auto port = ev_port_for(nic, ev, true, evs);  // evs's earlier bindings are in use
    if (port.ok()) continue;
    for (const auto& [key, p] : nic.srv6_ports)  // undo: the new bindings' ports as they were
      if (before.count(key) == 0)
        (void)nic.shard(0).host().set_port_path(key.first, p, own_path(nic, p));
    for (const auto& [key, p] : before)
      (void)nic.shard(0).host().set_port_path(key.first, p, key.second);
    nic.srv6_ports = before;
    return Err{port.error()};
  }
  return Ok{};
}

mrc_ctl_ev srv6_ev_of_port(const Nic& nic, int plane, uint16_t port) {
  mrc_ctl_ev ev{};
  const in6_addr a = wire::srv6_ev_address(nic.spec->planes[static_cast<size_t>(plane)].address6,
                                           nic.shard(0).host().port_path(plane, port));
  std::memcpy(ev.val, a.s6_addr, sizeof a.s6_addr);
  ev.port = static_cast<uint8_t>(plane + 1);
  return ev;
}

}  // namespace mrc::ocp
