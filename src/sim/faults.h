// What can go wrong in the simulated fabric, and where: per-link random faults (loss,
// duplication, reordering, bit corruption, forced trimming; a "gray" link is one with loss),
// degraded links (a lower rate), link/switch/plane down, flapping, and silent per-EV blackholes. A
// Scope names the links a fault applies to; a FaultAction is a fault change that can be applied now
// or scheduled in virtual time (Fabric::schedule).
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
// down, until `duration` has passed; then it stays up.
struct FlapSpec {
  Duration down_for{Duration::from_us(100)};
  Duration up_for{Duration::from_us(100)};
  Duration duration{Duration::from_ms(1)};
};

// One change to the fault state, for Fabric::apply (now) or Fabric::schedule (later).
struct FaultAction {
  enum class Kind : uint8_t { kSetFaults, kSetUp, kBlackhole, kFlap, kHealAll, kSetRate };
  Kind kind = Kind::kHealAll;
  Scope scope;
  LinkFaults faults;
  bool on = false;  // kSetUp: up; kBlackhole: blackholed
  Ev ev{0};         // kBlackhole, with scope.plane
  FlapSpec flap;
  double rate_fraction = 1.0;  // kSetRate: the links run at this fraction of their rate

  static FaultAction set_faults(Scope scope, LinkFaults faults);
  static FaultAction set_up(Scope scope, bool up);
  static FaultAction blackhole(PlaneId plane, Ev ev, bool on);
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
