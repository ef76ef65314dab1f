// Configuration of mrc's software verbs devices ("mrc0", "mrc1", ...): which planes (local
// IPv4 or IPv6 addresses) each device has, its MRC UDP port and the first UDP source port of its
// EVs, plus the plane lists of remote hosts, so that a destination GID names a whole peer.
//
// Read once per process from, in this order:
//   MRC_DEVICES   the configuration text itself, entries separated by ';' or newlines
//   MRC_CONFIG    the path of a configuration file
//   /etc/mrc/devices.conf
// Each entry (file line) is
//   <name> planes=<ip>[,<ip>...] [port=<udp port>] [ev-ports=<first source port>]
//   [drop=<fraction>] [backend=<udp|xdp>] [srv6=<uSID paths, e.g. 200,201>]
//   [path-policy=<p2c|rules|oblivious|reps|health|hedge>]
//   [secure=<off|auth|encrypt> key-file=<path>] [busy-poll-us=<0-1000000>]
//   peer planes=<ip>[,<ip>...] [port=<udp port>]
// srv6= puts the device in SRv6 uSID path mode (io/srv6.h): its planes are IPv6 locators and each
// EV's packets go to the container of its path; a peer's GID is its locator.
// Each key at most once per entry. '#' starts a comment. Device names are what
// ibv_get_device_list() shows; port k of a device (1-based) is its plane k. A peer is found by any
// of its plane addresses: local devices are peers too, so two processes on one host just use two
// devices of one configuration.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/udp_host.h"
#include "mrc/config.hpp"

namespace mrc::ocp {

struct DeviceSpec {
  std::string name;  // empty for a peer entry
  std::vector<io::PlaneAddress> planes;
  uint16_t port = 4791;
  uint16_t ev_port_base = 50000;
  double drop = 0;  // fraction of sent packets the datapath drops (impairment, for tests and demos)
  io::Backend backend = io::Backend::kUdp;  // backend=udp|xdp
  // path-policy=: the path policy of the device's QPs (QpConfig::path_policy)
  PathPolicyKind path_policy = PathPolicyKind::kP2c;
  // secure=: every QP of the device in this secure mode, its keys agreed over its own path at
  // RTR under the pre-shared key in key-file= (io/inband_keys.h; docs/OCP.md "Secure mode").
  SecureMode secure = SecureMode::kOff;
  std::string key_file;
  io::Srv6Paths srv6_paths;  // srv6=: SRv6 uSID path mode (empty: ECMP mode)
  // busy-poll-us=: for this many microseconds after work the device's datapath asks its sockets
  // without waiting instead of sleeping (io::DeviceConfig::busy_poll; 0, the default: it sleeps
  // when idle). At most kMaxBusyPollUs.
  uint32_t busy_poll_us = 0;
};

// The largest busy-poll-us= (one second, as `mrc perf --busy-poll-us`): busy polling stays
// bounded.
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
