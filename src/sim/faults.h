// What can go wrong in the simulated fabric, and where: per-link random faults (loss,
// duplication, reordering, bit corruption, forced trimming; a "gray" link is one with loss),
// degraded links (a lower rate), link/switch/plane down, flapping (with jitter), EV path faults
// (one EV's packets between two hosts lost: all of them, a blackhole, or a share, a gray path)
// and NIC drops (a port losing a share of what it receives or sends, as the MRC paper's "random
// drop on all NICs"). A Scope names the links a fault applies to; a FaultAction is a fault
// change that can be applied now or scheduled in virtual time (Fabric::schedule).
#pragma once

#include <cstdint>

#include "mrc/types.hpp"
#include "sim/packet.h"
#include "sim/topology.h"
#include "util/prng.h"

namespace mrc::sim {

struct LinkStats;

// Random faults of one link direction. Every probability is per packet; 0 disables the fault
// and draws nothing from the link's random stream.
struct LinkFaults {
  double loss = 0;       // the packet vanishes on the wire (after using its serialization time)
  double duplicate = 0;  // a second copy (same id) arrives right after the original
  double corrupt = 0;    // one random bit of the datagram is flipped
  double reorder = 0;    // the packet is delayed by an extra uniform [0, reorder_max_delay]
  Duration reorder_max_delay{Duration::from_us(5)};
  double trim = 0;  // a trimmable data packet is trimmed at enqueue regardless of the queue

  bool any() const { return loss > 0 || duplicate > 0 || corrupt > 0 || reorder > 0 || trim > 0; }
};

// A set of links. For faults (set_faults) a switch means its output links; for up/down
// (set_up) it means every link attached to it. `classes` filters by LinkClass bits, e.g.
// bit(LinkClass::kHostUp) | bit(LinkClass::kHostDown) for "every NIC cable".
struct Scope {
  enum class Kind : uint8_t { kLink, kSwitch, kPlane, kFabric };
  Kind kind = Kind::kFabric;
  LinkId link{0};
  PlaneId plane{0};
  NodeId node{0};
  uint8_t classes = kAllLinkClasses;

  static Scope of_link(LinkId link) {
    return Scope{Kind::kLink, link, PlaneId(0), NodeId(0), kAllLinkClasses};
  }
  static Scope of_switch(PlaneId plane, NodeId node) {
    return Scope{Kind::kSwitch, LinkId(0), plane, node, kAllLinkClasses};
  }
  static Scope of_plane(PlaneId plane) {
    return Scope{Kind::kPlane, LinkId(0), plane, NodeId(0), kAllLinkClasses};
  }
  static Scope fabric() { return Scope{}; }
  Scope only(uint8_t link_classes) const {
    Scope s = *this;
    s.classes = link_classes;
    return s;
  }
};

// A link alternating down and up: down for `down_for`, up for `up_for`, repeated, starting
// down, until `duration` has passed; then it stays up. With jitter, each period is its nominal
// length plus a uniform draw from [-jitter, +jitter] (REQUIRES jitter < both periods).
struct FlapSpec {
  Duration down_for{Duration::from_us(100)};
  Duration up_for{Duration::from_us(100)};
  Duration duration{Duration::from_ms(1)};
  Duration jitter{0};
};

inline constexpr HostId kAnyHost = UINT32_MAX;

// Packets with entropy `ev` on `plane` from `src` to `dst` (kAnyHost: any host) are lost at the
// first switch of their path with probability `loss`: 1 is a blackhole, below 1 a gray path, 0
// clears the fault. It follows the EV value, as a path a hash picks would: an EV the engine
// replaces escapes it (a faulty link is LinkFaults::loss on that link).
struct PathFault {
  PlaneId plane{0};
  Ev ev{0};
  HostId src = kAnyHost;
  HostId dst = kAnyHost;
  double loss = 1.0;
};

// A NIC port (host `host` on `plane`; kAnyHost / kAllPlanes: every one) that loses a share of
// the packets it receives (`rx`) and sends (`tx`), independently per packet; 0 and 0 clears.
// A dropped packet is counted as dropped_nic on the host's downlink (rx) or uplink (tx).
struct NicDrop {
  static constexpr int kAllPlanes = -1;
  HostId host = kAnyHost;
  int plane = kAllPlanes;
  double rx = 0;
  double tx = 0;
};

// One change to the fault state, for Fabric::apply (now) or Fabric::schedule (later).
struct FaultAction {
  enum class Kind : uint8_t { kSetFaults, kSetUp, kPathFault, kNicDrop, kFlap, kHealAll, kSetRate };
  Kind kind = Kind::kHealAll;
  Scope scope;
  LinkFaults faults;
  bool on = false;  // kSetUp: up
  PathFault path;   // kPathFault
  NicDrop nic;      // kNicDrop
  FlapSpec flap;
  double rate_fraction = 1.0;  // kSetRate: the links run at this fraction of their rate

  static FaultAction set_faults(Scope scope, LinkFaults faults);
  static FaultAction set_up(Scope scope, bool up);
  static FaultAction path_fault(const PathFault& path);
  static FaultAction nic_drop(const NicDrop& nic);
  static FaultAction start_flap(Scope scope, FlapSpec flap);
  static FaultAction heal_all();
  // A degraded link (e.g. a lane down in a 4-lane optic): serializes at `fraction` of its rate.
  static FaultAction set_rate(Scope scope, double fraction);
};

// What the wire did to one packet (applied when its serialization ends).
struct WireOutcome {
  bool lost = false;
  PacketPtr duplicate;      // a copy to deliver too, or null
  Duration extra_delay{0};  // reordering delay added to the original
};

// Draws the wire faults for `packet` from `prng` and counts them in `stats`.
WireOutcome apply_wire_faults(const LinkFaults& faults, Prng& prng, SimPacket& packet,
                              LinkStats& stats);

}  // namespace mrc::sim
