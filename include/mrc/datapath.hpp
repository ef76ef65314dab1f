// The datapath's vocabulary in mrc's APIs: the impairments a datapath can apply (drop, delay,
// reorder, planes down on a schedule or flapping), its backends, a plane's counters, and the
// numbers of EV source ports and engine threads a host may use. The UDP datapath (src/io) and
// the native API (mrc/mrc.hpp) share these definitions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mrc/error.hpp"
#include "mrc/result.hpp"
#include "mrc/types.hpp"

namespace mrc {

struct PlaneEvent {
  Duration at;  // since the host was opened
  int plane = 0;
  bool up = false;
};

// A plane that flaps for as long as the host runs: down in [k * every, k * every + down_for)
// for k = 1, 2, ... (so up for the first `every`), up otherwise. The state at any time is a
// function of the time alone, so a run of any length needs no list of events. Valid when
// 0 < down_for < every (UdpHost::open refuses others).
struct PlaneFlap {
  int plane = 0;
  Duration down_for{0};
  Duration every{0};
  bool down_at(Duration since_open) const;
  // The first time after `since_open` at which down_at() changes.
  Duration next_change(Duration since_open) const;
};

struct Impairment {
  double drop = 0;     // fraction of sent packets dropped
  Duration delay{0};   // added to every sent packet
  double reorder = 0;  // fraction of packets delayed by an extra uniform [0, reorder_delay]
  Duration reorder_delay{Duration::from_us(200)};
  std::vector<PlaneEvent> schedule;
  // A plane is down while any flap of it is down, and independently of `schedule` and
  // set_plane_up(): it is up only when none of them holds it down.
  std::vector<PlaneFlap> flaps;
  uint64_t seed = 1;
  bool any() const {
    return drop > 0 || delay.ns > 0 || reorder > 0 || !schedule.empty() || !flaps.empty();
  }
};

enum class Backend : uint8_t { kUdp, kXdp };
const char* to_string(Backend backend);
// "udp" or "xdp"; the error lists the choices.
Result<Backend, Error> parse_backend(const std::string& text);

struct UdpPlaneStats {
  uint64_t packets_sent = 0;
  uint64_t bytes_sent = 0;
  uint64_t packets_received = 0;
  uint64_t bytes_received = 0;
  uint64_t send_errors = 0;    // EAGAIN/ENOBUFS and others: the packet is lost, the engine recovers
  uint64_t send_calls = 0;     // system calls that sent (one per GSO batch or sendmmsg)
  uint64_t receive_calls = 0;  // recvmmsg calls that returned datagrams
  uint64_t impairment_drops = 0;
  // Packets whose EV is not one of this plane's source ports (QpConfig::ev_port_base /
  // ev_ports_per_plane disagree with this host's): sent from the plane's first port instead.
  uint64_t ev_port_mismatches = 0;
  // xdp backend (XdpLinkStats, filled in by plane_stats()): frames refused on receive (bad
  // ICRC, malformed headers), and datagrams not sent because the next hop's MAC was not known
  // yet (the engine resends them).
  uint64_t receive_refused = 0;
  uint64_t unresolved_neighbour = 0;
  bool up = true;
  // Adds another shard's counts of the same plane (a host's shards); `up` stays this one's.
  UdpPlaneStats& operator+=(const UdpPlaneStats& o);
};

// How many UDP source ports, from a device's ev_port_base on, a device with `planes` planes
// binds for its EVs (devices on one host need disjoint ranges): an equal stride per plane,
// room for the largest EV count (256) plus backups.
inline uint32_t ev_source_ports(size_t planes) {
  return planes == 0 ? 0 : static_cast<uint32_t>(planes * (256 / planes + 16));
}
// Each plane's share of them: plane p owns [ev_port_base + p * n, ev_port_base + (p + 1) * n).
inline uint16_t ev_source_ports_per_plane(size_t planes) {
  return static_cast<uint16_t>(planes == 0 ? 0 : 256 / planes + 16);
}

inline constexpr uint32_t kMaxDeviceThreads = 16;

// Secure mode's pre-shared key (ContextOptions::preshared_key) from a key file: hex digits (at
// least 32; whitespace ignored), such as `openssl rand -hex 32 > mrc.key` writes, readable by
// its owner only (chmod 600). Errors name the file and the fix.
inline constexpr size_t kMinPresharedKeyBytes = 16;
Result<std::vector<uint8_t>, Error> read_key_file(const std::string& path);

}  // namespace mrc
