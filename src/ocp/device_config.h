// Configuration of mrc's software verbs devices ("mrc0", "mrc1", ...): which planes (local
// IPv4 or IPv6 addresses) each device has, its MRC UDP port and the first UDP source port of its
// EVs, plus the plane lists of remote hosts, so that a destination GID names a whole peer.
//
// Read once per process from, in this order:
//   MRC_DEVICES   the configuration text itself, entries separated by ';' or newlines
//   MRC_CONFIG    the path of a configuration file
//   /etc/mrc/devices.conf
// Each entry (file line) is
//   <name> planes=<ip>[,<ip>...] [<host setting>=<value> ...] [path-policy=<policy>]
//   peer planes=<ip>[,<ip>...] [port=<udp port>] [threads=<its device's threads=>]
// A device's host settings are the table every front door of mrc shares (host/options.h):
// port=, ev-port-base= (also ev-ports=), backend=, gso=, srv6-paths= (also srv6=),
// busy-poll-us=, threads=, secure= with key-file=, drop=, metrics-port=, metrics-bind=, pcap=,
// pcap-max-mib=; planes= also takes interface names and IPv4 prefixes. path-policy= (p2c, rules,
// oblivious, reps, health, hedge) is the path policy of the device's QPs. threads= (1..16) runs the
// device on that many engine threads (host/host.h shards): shard s listens on port= + s, so a peer
// entry of a host whose device runs several says threads= too (a QP's number tells its shard). A
// peer's planes and port are its shard 0's. srv6= puts the device in SRv6 uSID path mode
// (wire/srv6.h): its planes are IPv6 locators and each EV's packets go to the container of its
// path; a peer's GID is its locator. Each key at most once per entry. '#' starts a comment. Device
// names are what ibv_get_device_list() shows; port k of a device (1-based) is its plane k. A peer
// is found by any of its plane addresses: local devices are peers too, so two processes on one host
// just use two devices of one configuration.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host/options.h"
#include "io/udp_host.h"
#include "mrc/config.hpp"

namespace mrc::ocp {

struct DeviceSpec {
  std::string name;  // empty for a peer entry
  // The planes' receive addresses: host.context.planes, each on host.context.port.
  std::vector<io::PlaneAddress> planes;
  // The device's host settings (host/options.h); a peer's has its planes and port only. The
  // key file is read when the device opens (host.key_file).
  host::Options host;
  wire::Srv6Paths srv6_paths;  // host.context.srv6_paths parsed (empty: ECMP mode)
  // path-policy=: the path policy of the device's QPs (QpConfig::path_policy)
  PathPolicyKind path_policy = PathPolicyKind::kP2c;
};

// The largest busy-poll-us= (one second, as every front door's): busy polling stays bounded.
inline constexpr uint32_t kMaxBusyPollUs = 1'000'000;

struct DeviceConfig {
  std::vector<DeviceSpec> devices;
  std::vector<DeviceSpec> peers;  // remote hosts (and, implicitly, every local device)
  std::string source;             // where it was read from, for messages
  std::string error;              // non-empty: the configuration is unusable, and why
};

// Parses configuration text; `source` names it in error messages ("MRC_DEVICES", a path).
DeviceConfig parse_device_config(const std::string& text, const std::string& source);

// The process's configuration (read on first use; errors are printed once to stderr).
const DeviceConfig& device_config();

// The plane list of the host owning `ipv4` (network byte order), from devices and peers.
std::optional<DeviceSpec> find_peer(const DeviceConfig& config, uint32_t ipv4);
// The same for a RoCEv2 GID: an IPv4-mapped GID names an IPv4 plane, any other an IPv6 one.
std::optional<DeviceSpec> find_peer_by_gid(const DeviceConfig& config, const uint8_t (&gid)[16]);
// Whether `gid` is IPv4-mapped (::ffff:a.b.c.d); then `ipv4` (network order) is its address.
bool gid_ipv4(const uint8_t (&gid)[16], uint32_t& ipv4);
// GID `index` (0-3) of port `port` (1-based) of a device, as its verbs device and sysfs show
// it: 0/1 link-local (RoCEv1/v2: fe80::/64 with the EUI-64 id of MAC 02:00:<ipv4> for an IPv4
// plane, the address's low 64 bits for an IPv6 one), 2/3 the plane's address (::ffff:<ipv4>, or
// the IPv6 address itself). False if there is no such port or index.
bool plane_gid(const DeviceSpec& spec, int port, int index, uint8_t (&gid)[16]);
// The address a GID names, as text: "10.0.0.1" for an IPv4-mapped GID, else the IPv6 address.
std::string gid_text(const uint8_t (&gid)[16]);

}  // namespace mrc::ocp
